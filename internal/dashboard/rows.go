package dashboard

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// maxRows bounds a view's page: the page asks for the rows it can show.
const maxRows = 500

// View is what one page is looking at: a filter and a window of rows.
type View struct {
	// Query matches leases whose name or holder contains it.
	Query     string `json:"q"`
	Namespace string `json:"ns"`
	// Label is a label selector ("a=b,c!=d") matched against the lease's
	// labels and, for a node lease, its Node's.
	Label string `json:"label"`
	// State is one of healthy, late, expired, unknown, notready, or "".
	State  string `json:"state"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

// Row is one lease as the table shows it.
type Row struct {
	Namespace   string   `json:"namespace"`
	Name        string   `json:"name"`
	Holder      string   `json:"holder"`
	Renew       int64    `json:"renew"`    // Unix ms, 0 never
	Duration    int64    `json:"duration"` // seconds
	Transitions int32    `json:"transitions"`
	State       string   `json:"state"`
	Owner       string   `json:"owner,omitempty"`
	Orphaned    bool     `json:"orphaned,omitempty"`
	Ready       string   `json:"ready,omitempty"` // node leases: the Node's Ready status, "missing" without a Node
	Taints      []string `json:"taints,omitempty"`
}

// Rows is one page of a view.
type Rows struct {
	Total  int    `json:"total"`
	Offset int    `json:"offset"`
	Rows   []Row  `json:"rows"`
	Error  string `json:"error,omitempty"`
}

// Rows returns the page of v at now.
func (f *Fleet) Rows(v View, now time.Time) Rows {
	out := Rows{Rows: []Row{}, Offset: max(0, v.Offset)}
	sel := labels.Everything()
	if strings.TrimSpace(v.Label) != "" {
		s, err := labels.Parse(v.Label)
		if err != nil {
			out.Error = fmt.Sprintf("label selector: %v", err)
			return out
		}
		sel = s
	}
	state, stateOK := parseState(v.State)
	notReady := v.State == "notready"
	if v.State != "" && !stateOK && !notReady {
		out.Error = fmt.Sprintf("unknown state %q", v.State)
		return out
	}
	limit := min(max(v.Limit, 0), maxRows)
	q := strings.ToLower(v.Query)

	f.mu.Lock()
	defer f.mu.Unlock()
	f.order()
	lo, hi := 0, len(f.sorted)
	if v.Namespace != "" {
		lo, hi = f.namespace(v.Namespace)
	}
	nowNs := now.UnixNano()
	// countOnly: no filter reads the record, so a lease outside the page
	// is counted without it.
	countOnly := q == "" && sel.Empty() && !notReady
	// The state is read from f.hot before any record: a page of every
	// lease, or of one state, does not follow a pointer per lease.
	for i := lo; i < hi; i++ {
		st, _ := f.hot[i].classify(nowNs)
		if stateOK && st != state {
			continue
		}
		if countOnly && (out.Total < out.Offset || len(out.Rows) >= limit) {
			out.Total++ // outside the page: only counted
			continue
		}
		r := f.sorted[i]
		if q != "" && !strings.Contains(strings.ToLower(r.key.name), q) && !strings.Contains(strings.ToLower(r.holder), q) {
			continue
		}
		var node *nodeRecord
		if r.key.ns == NodeLeaseNamespace {
			node = f.nodes[r.key.name]
		}
		if !sel.Empty() && !sel.Matches(labels.Set(r.labels)) && (node == nil || !sel.Matches(labels.Set(node.labels))) {
			continue
		}
		if notReady && (node == nil || node.ready == corev1.ConditionTrue) {
			continue
		}
		out.Total++
		if out.Total <= out.Offset || len(out.Rows) >= limit {
			continue
		}
		out.Rows = append(out.Rows, f.row(r, node, st))
	}
	return out
}

// row renders r. f.mu is held.
func (f *Fleet) row(r *leaseRecord, node *nodeRecord, st State) Row {
	row := Row{Namespace: r.key.ns, Name: r.key.name, Holder: r.holder, Renew: unixMilli(r.renew),
		Duration: int64(r.duration / time.Second), Transitions: r.transitions, State: st.String()}
	if r.owner != nil {
		row.Owner = r.owner.kind + "/" + r.owner.name
		row.Orphaned = f.orphaned(r)
	}
	if r.key.ns == NodeLeaseNamespace && f.nodesKnown {
		if node == nil {
			row.Ready = "missing"
		} else {
			row.Ready, row.Taints = string(node.ready), node.taints
			if row.Ready == "" {
				row.Ready = "none"
			}
		}
	}
	return row
}

// CellName is the node lease drawn at index i of the heat map (in the
// order of the latest snapshot), or "" when there is none.
func (f *Fleet) CellName(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order()
	if i < 0 || i >= len(f.nodeLeases) {
		return ""
	}
	return f.nodeLeases[i].key.name
}
