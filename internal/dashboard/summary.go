package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	// maxLeaders and maxTimelineShown bound the leaders part of a summary;
	// maxAttention each attention category (totals are always exact).
	maxLeaders       = 200
	maxTimelineShown = 12
	maxAttention     = 20
	// identityLabel marks kube-apiserver's (and leasehold serve's) identity
	// leases in kube-system; an expired one waits for garbage collection.
	identityLabel     = "apiserver.kubernetes.io/identity"
	identityNamespace = "kube-system"
)

// Summary is everything the page shows that does not depend on its view.
type Summary struct {
	// Now is the server's clock (Unix ms), so the page can count down
	// expiries against it rather than against its own clock.
	Now        int64     `json:"now"`
	NodeLeases int       `json:"nodeLeases"`
	Leases     int       `json:"leases"`
	Nodes      int       `json:"nodes"`
	Counts     Counts    `json:"counts"`
	Histogram  []int     `json:"histogram"`
	Leaders    []Leader  `json:"leaders"`
	Attention  Attention `json:"attention"`
	// Access says, per resource the dashboard reads, "ok", "syncing", or
	// why it cannot read it ("forbidden: ...").
	Access map[string]string `json:"access"`
}

// Counts are the node fleet's totals: node leases by state, and Nodes whose
// Ready condition is not True.
type Counts struct {
	Healthy  int `json:"healthy"`
	Late     int `json:"late"`
	Expired  int `json:"expired"`
	Unknown  int `json:"unknown"`
	NotReady int `json:"notReady"`
}

// Leader is one leader-election lease.
type Leader struct {
	Namespace   string       `json:"namespace"`
	Name        string       `json:"name"`
	Holder      string       `json:"holder"`
	Since       int64        `json:"since"` // acquireTime, Unix ms; 0 unknown
	Renew       int64        `json:"renew"`
	Duration    int64        `json:"duration"` // seconds
	Transitions int32        `json:"transitions"`
	State       string       `json:"state"`
	Timeline    []Transition `json:"timeline"`
}

// Attention lists what a person should look at, at most maxAttention items
// of each kind, with each kind's total.
type Attention struct {
	Flapping      []Item `json:"flapping"`
	FlappingTotal int    `json:"flappingTotal"`
	Late          []Item `json:"late"`
	LateTotal     int    `json:"lateTotal"`
	Skewed        []Item `json:"skewed"`
	SkewedTotal   int    `json:"skewedTotal"`
	Identity      []Item `json:"identity"`
	IdentityTotal int    `json:"identityTotal"`
}

// Item is one attention entry.
type Item struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Detail    string `json:"detail"`
}

// Snapshot computes the summary and the heat map (one cell per node lease,
// in namespace/name order) at now.
func (f *Fleet) Snapshot(now time.Time) (Summary, *heatMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.order()
	s := Summary{Now: now.UnixMilli(), NodeLeases: len(f.nodeLeases), Leases: len(f.leases), Nodes: len(f.nodes),
		Histogram: make([]int, HistogramBuckets)}
	n := len(f.nodeLeases)
	heat := &heatMap{layout: f.layout, codes: make([]uint16, n), durs: make([]uint16, n)}
	nowNs := now.UnixNano()
	for i, h := range f.hot[f.nodeLo:f.nodeHi] {
		st, ratio := h.classify(nowNs)
		heat.codes[i], heat.durs[i] = h.cell(nowNs)
		switch st {
		case Healthy:
			s.Counts.Healthy++
		case Late:
			s.Counts.Late++
		case Expired:
			s.Counts.Expired++
		default:
			s.Counts.Unknown++
		}
		if st != Unknown {
			s.Histogram[bucket(ratio)]++
		}
	}
	s.Counts.NotReady = f.notReady
	for name, n := range f.flapping {
		s.Attention.FlappingTotal++
		addItem(&s.Attention.Flapping, "", name, "Ready changed %d times in %v, now %s", len(n.flips), flapWindow, readyText(n.ready))
	}
	s.Leaders = f.leadersAt(now)
	f.leaseAttention(&s.Attention, now)
	sortItems(s.Attention.Flapping)
	return s, heat
}

// leaseAttention fills the late, skewed and identity lists from the leases
// marked in f.hot, and unmarks those whose lateness has aged out. f.mu is
// held.
func (f *Fleet) leaseAttention(a *Attention, now time.Time) {
	for i := range f.hot {
		if !f.hot[i].attn {
			continue
		}
		r, marked := f.sorted[i], false
		if !r.lateAt.IsZero() && now.Sub(r.lateAt) < lateWindow {
			marked = true
			a.LateTotal++
			addItem(&a.Late, r.key.ns, r.key.name, "renewed %v after the previous renewal (%v ago)", r.lateGap.Round(100*time.Millisecond), now.Sub(r.lateAt).Round(time.Second))
		}
		if absDuration(r.skew) > SkewThreshold {
			marked = true
			a.SkewedTotal++
			addItem(&a.Skewed, r.key.ns, r.key.name, "renewTime %v from when the renewal was seen (holder %s)", r.skew.Round(100*time.Millisecond), r.holder)
		}
		if _, ok := r.labels[identityLabel]; ok && r.key.ns == identityNamespace {
			marked = true
			if st, _ := Classify(r.renew, r.duration, now); st == Expired {
				a.IdentityTotal++
				addItem(&a.Identity, r.key.ns, r.key.name, "expired %v ago, awaiting collection (holder %s)", now.Sub(r.renew.Add(r.duration)).Round(time.Second), r.holder)
			}
		}
		f.hot[i].attn = marked
	}
}

// leadersAt lists the leader-election leases. f.mu is held.
func (f *Fleet) leadersAt(now time.Time) []Leader {
	out := []Leader{}
	for k, h := range f.leaders {
		l := Leader{Namespace: k.ns, Name: k.name, State: "deleted"}
		if r := f.leases[k]; r != nil {
			st, _ := Classify(r.renew, r.duration, now)
			l.Holder, l.Since, l.Renew, l.Duration, l.Transitions, l.State =
				r.holder, unixMilli(r.acquire), unixMilli(r.renew), int64(r.duration/time.Second), r.transitions, st.String()
		}
		// A copy: the summary is encoded after f.mu is released.
		l.Timeline = slices.Clone(h.timeline[max(0, len(h.timeline)-maxTimelineShown):])
		if l.Timeline == nil {
			l.Timeline = []Transition{}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Leader) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if len(out) > maxLeaders {
		out = out[:maxLeaders]
	}
	return out
}

// addItem appends an item unless the list is full; the detail is formatted
// only then: a fleet that restarted has every lease late at once.
func addItem(items *[]Item, ns, name, format string, args ...any) {
	if len(*items) < maxAttention {
		*items = append(*items, Item{Namespace: ns, Name: name, Detail: fmt.Sprintf(format, args...)})
	}
}

func sortItems(items []Item) {
	slices.SortFunc(items, func(a, b Item) int { return cmp.Compare(a.Name, b.Name) })
}

func readyText(s corev1.ConditionStatus) string {
	if s == "" {
		return "no Ready condition"
	}
	return "Ready=" + string(s)
}

// unixMilli is t in Unix ms, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
