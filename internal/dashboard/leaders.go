package dashboard

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Transition kinds: how a lease passed from one holder to the next.
const (
	KindReleased  = "released"                        // the old holder emptied holderIdentity, then someone acquired it
	KindTakenOver = "expired and taken over"          // a new holder overwrote a holder that had stopped renewing
	KindHandOver  = "handed over to preferred holder" // coordinated election: preferredHolder became the holder
	KindElected   = "became leader (event)"           // known only from a LeaderElection event
	KindStopped   = "stopped leading (event)"         // a LeaderElection event
	maxTimeline   = 50                                // transitions kept per lease, newest last
	eventMatchGap = time.Minute                       // an event this close to a watched transition confirms it
	leaderEvent   = "LeaderElection"                  // the reason client-go's resource lock records events with
	becameSuffix  = " became leader"                  // client-go's event message forms
	stoppedSuffix = " stopped leading"
)

// Transition is one entry of a leader timeline.
type Transition struct {
	At   time.Time `json:"at"`
	From string    `json:"from,omitempty"`
	To   string    `json:"to,omitempty"`
	// Token is the lease's leaseTransitions after the change: the fencing
	// token the new holder got. -1 when only an event told of it.
	Token int32  `json:"token"`
	Kind  string `json:"kind"`
	// Event is set when a LeaderElection event confirms the transition.
	Event bool `json:"event,omitempty"`
}

// leaderHistory is what the dashboard knows of one leader-election lease.
type leaderHistory struct {
	// released is the holder that last emptied holderIdentity, until the
	// next holder appears; preferred the last preferredHolder seen.
	released, preferred string
	timeline            []Transition
}

// leader returns the history of k, creating it. f.mu is held.
func (f *Fleet) leader(k leaseKey) *leaderHistory {
	h := f.leaders[k]
	if h == nil {
		h = &leaderHistory{}
		f.leaders[k] = h
	}
	return h
}

// observe updates the history with a lease change seen through the watch:
// old is nil for the first sight of the lease, which is not a transition.
func (h *leaderHistory) observe(old, r *leaseRecord, now time.Time) {
	if old == nil {
		h.preferred = r.preferred
		return
	}
	if r.holder == "" {
		if old.holder != "" {
			h.released = old.holder
		}
		return
	}
	if r.holder != old.holder || r.transitions != old.transitions {
		from, kind := old.holder, KindTakenOver
		switch {
		case h.preferred != "" && h.preferred == r.holder:
			kind = KindHandOver
		case old.holder == "":
			from, kind = h.released, KindReleased
		}
		at := r.acquire
		if at.IsZero() {
			at = now
		}
		h.add(Transition{At: at, From: from, To: r.holder, Token: r.transitions, Kind: kind})
		h.released = ""
	}
	if r.preferred != "" || r.holder == h.preferred {
		h.preferred = r.preferred
	}
}

func (h *leaderHistory) add(t Transition) {
	h.timeline = append(h.timeline, t)
	// Keep the timeline ordered by time: events can arrive late.
	for i := len(h.timeline) - 1; i > 0 && h.timeline[i].At.Before(h.timeline[i-1].At); i-- {
		h.timeline[i], h.timeline[i-1] = h.timeline[i-1], h.timeline[i]
	}
	if len(h.timeline) > maxTimeline {
		h.timeline = h.timeline[len(h.timeline)-maxTimeline:]
	}
}

// SetEvent records a LeaderElection event about a Lease: it confirms a
// transition the watch saw, or adds one the dashboard was not running for.
func (f *Fleet) SetEvent(e *corev1.Event) {
	if e.Reason != leaderEvent || e.InvolvedObject.Kind != "Lease" {
		return
	}
	at := eventTime(e)
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.leader(leaseKey{e.InvolvedObject.Namespace, e.InvolvedObject.Name})
	switch {
	case strings.HasSuffix(e.Message, becameSuffix):
		id := strings.TrimSuffix(e.Message, becameSuffix)
		for i := range h.timeline {
			t := &h.timeline[i]
			if t.To == id && t.Kind != KindElected && absDuration(t.At.Sub(at)) < eventMatchGap {
				t.Event = true
				return
			}
		}
		h.addOnce(Transition{At: at, To: id, Token: -1, Kind: KindElected, Event: true})
	case strings.HasSuffix(e.Message, stoppedSuffix):
		h.addOnce(Transition{At: at, From: strings.TrimSuffix(e.Message, stoppedSuffix), Token: -1, Kind: KindStopped, Event: true})
	}
}

// addOnce adds t unless it is already there: an event is seen again when
// it is updated or listed anew.
func (h *leaderHistory) addOnce(t Transition) {
	for _, o := range h.timeline {
		if o.At.Equal(t.At) && o.Kind == t.Kind && o.From == t.From && o.To == t.To {
			return
		}
	}
	h.add(t)
}

// eventTime is when an event happened, from whichever field its recorder set.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
