package nodelifecycle

import (
	"strconv"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeView is what a monitor pass reads of a node, copied out of the node
// object: the pass looks at every node every MonitorPeriod, and holding
// these few fields instead of the object lets the object itself be kept
// compactly (or dropped) by whoever stores it. A node that has to be
// written is read whole at that moment (see assessHealth).
//
// The pass's views live in the node table's records (nodeState), rebuilt
// in place (set) only when a node's revision changes; viewOf makes a
// stand-alone one for a node read outside a pass. A record's view points
// into no node object (its name is the watch cache's key, its other
// strings copies shared through package unique), and it holds each field
// in its smallest exact form: 88 bytes, where the view was a 256-byte heap
// object per node holding the node's taint slice, its Ready condition and
// creation time as metav1 values, and its name and uid strings.
type nodeView struct {
	// name is the node's name; in a table record, the table's key (the
	// watch cache's own key string, not a copy from the decoded node).
	name string
	// revision is the node's resourceVersion as a number (-1 if it is not
	// one): what the next pass compares with the store's revision of the
	// node, and what a status write is conditioned on.
	revision int64
	// zoneKey is zoneKey of the node (see zone), interned (package
	// unique): zoneKey builds the key anew for every node, and a view that
	// kept it kept a 32-byte object per node for a region and a zone of a
	// dozen characters each, where the nodes of a zone now share one copy
	// and the handle is half a string header. (The fleet of
	// heap-per-node.sh has no zone labels: there the gain is the 8 bytes.)
	zoneKey unique.Handle[string]
	// ready is the node's Ready condition when hasReady says it has one.
	// Without one, ready.heartbeat holds the node's creation time instead,
	// the one time such a node is judged by (created): a field of its own
	// was 16 bytes per node, used only by nodes that never posted status.
	ready readyState
	// noSchedule are the controller-owned NoSchedule taint keys the node's
	// conditions and spec.unschedulable call for, in condition order.
	noSchedule keySeq
	// taints are the controller-owned taints the node carries.
	taints taintSet
	// hasReady says ready is the node's Ready condition; excluded says the
	// node carries labelExcludeDisruption.
	hasReady bool
	excluded bool
}

// readyState is a node's Ready condition as a view holds it: its strings
// interned together, its times as instants. Its type is NodeReady.
type readyState struct {
	text                  unique.Handle[conditionText]
	heartbeat, transition instant
}

// conditionText is a condition's status, reason and message. A fleet's
// nodes mostly have the same ones (a kubelet posting Ready), so a view
// holds them as a handle to one shared copy (package unique, which drops a
// value no handle refers to): 8 bytes per node where three string headers
// were 48, though the strings themselves were shared already (the watch
// cache interns them).
type conditionText struct {
	status          corev1.ConditionStatus
	reason, message string
}

// instant is a time as seconds and nanoseconds since the zero time: all of
// a metav1.Time that the controller compares (to the nanosecond, as
// equality.Semantic does), in 16 bytes instead of 24, and no pointer (a
// time.Time's location) for the collector to follow. The zero instant is
// the zero time.
type instant struct {
	sec  int64
	nsec int32
}

// unixToZero is the Unix time of the zero time.Time, January 1, year 1 UTC.
const unixToZero = -62135596800

func instantOf(t metav1.Time) instant {
	if t.IsZero() {
		return instant{}
	}
	return instant{sec: t.Unix() - unixToZero, nsec: int32(t.Nanosecond())}
}

// time is the time i holds (in the local time zone, as decoded times are).
func (i instant) time() metav1.Time {
	if i == (instant{}) {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(i.sec+unixToZero, int64(i.nsec)))
}

// viewOf returns a view of n, outside the node table. It shares n's
// strings, not n.
func viewOf(n *corev1.Node) *nodeView {
	v := &nodeView{name: n.Name}
	v.set(n)
	return v
}

// set makes v the view of n, keeping v's name (n's name, or in a table
// record the same name held once).
func (v *nodeView) set(n *corev1.Node) {
	*v = nodeView{
		name:       v.name,
		revision:   -1,
		zoneKey:    unique.Make(zoneKey(n)),
		noSchedule: wantedNoSchedule(n),
		taints:     taintSetOf(n.Spec.Taints),
	}
	if rev, err := strconv.ParseInt(n.ResourceVersion, 10, 64); err == nil {
		v.revision = rev
	}
	_, v.excluded = n.Labels[labelExcludeDisruption]
	if r := readyCondition(&n.Status); r != nil {
		v.ready = readyState{
			text:      unique.Make(conditionText{status: r.Status, reason: r.Reason, message: r.Message}),
			heartbeat: instantOf(r.LastHeartbeatTime), transition: instantOf(r.LastTransitionTime),
		}
		v.hasReady = true
		return
	}
	v.ready.heartbeat = instantOf(n.CreationTimestamp)
}

// readyCondition returns the view's Ready condition, equal (semantically,
// as the API compares times) to the node's. Only for a view that hasReady.
func (v *nodeView) readyCondition() corev1.NodeCondition {
	text := v.ready.text.Value()
	return corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             text.status,
		LastHeartbeatTime:  v.ready.heartbeat.time(),
		LastTransitionTime: v.ready.transition.time(),
		Reason:             text.reason,
		Message:            text.message,
	}
}

// zone is the node's zone key ("" for a view never set).
func (v *nodeView) zone() string {
	if v.zoneKey == (unique.Handle[string]{}) {
		return ""
	}
	return v.zoneKey.Value()
}

// created returns the node's creation time. Only for a view without a
// Ready condition (see ready).
func (v *nodeView) created() metav1.Time { return v.ready.heartbeat.time() }

// nodeRef is a node object carrying only a name and uid: all an event about
// the node needs.
func nodeRef(name string, uid types.UID) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
}
