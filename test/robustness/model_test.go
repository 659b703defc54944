package robustness

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The model: Kubernetes' semantics for one Lease name, as a nondeterministic
// sequential specification (an unknown write may or may not have happened).

// Operation kinds.
const (
	opCreate = "create"
	opGet    = "get"
	opUpdate = "update" // PUT
	opPatch  = "patch"  // JSON merge patch
	opDelete = "delete"
	opRead   = "read" // one key's part of a list
)

// Results.
const (
	resOK       = "ok"
	resNotFound = "notfound" // 404
	resExists   = "exists"   // 409 AlreadyExists
	resConflict = "conflict" // 409 Conflict (a precondition failed)
	resInvalid  = "invalid"  // 422: an update of an existing Lease without a resourceVersion
	resRefused  = "refused"  // 507: the disk is full; nothing was written
	resUnknown  = "unknown"  // the answer was lost: may or may not have happened
)

// input is what a client asked. RV and UID are preconditions (0 and ""
// for none); Value is what a write sets (spec.holderIdentity, unique per
// write).
type input struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	RV    int64  `json:"rv,omitempty"`
	UID   string `json:"uid,omitempty"`
}

// output is what it was answered: for ok, the object as returned (for a
// delete, nothing).
type output struct {
	Result string `json:"result"`
	Value  string `json:"value,omitempty"`
	RV     int64  `json:"rv,omitempty"`
	UID    string `json:"uid,omitempty"`
	Err    string `json:"err,omitempty"`
}

// state is one Lease name. RV 0 and UID "" mean not known yet: the object
// was written by a write whose answer was lost; the first read binds them.
// Last is the highest resourceVersion the object is known to have had: a
// new one must exceed it.
type state struct {
	Exists bool
	Value  string
	RV     int64
	UID    string
	Last   int64
}

func (s state) String() string {
	if !s.Exists {
		return fmt.Sprintf("absent (last rv %d)", s.Last)
	}
	rv, uid := fmt.Sprint(s.RV), s.UID
	if s.RV == 0 {
		rv = "?"
	}
	if uid == "" {
		uid = "?"
	}
	return fmt.Sprintf("%s rv=%s uid=%.8s", s.Value, rv, uid)
}

// bind checks that a returned object (rv, uid) can be the state's and
// returns the state with what it learnt.
func (s state) bind(rv int64, uid string) (state, bool) {
	if s.RV != 0 && s.RV != rv || s.RV == 0 && rv <= s.Last {
		return s, false
	}
	if s.UID != "" && s.UID != uid {
		return s, false
	}
	s.RV, s.UID = rv, uid
	s.Last = max(s.Last, rv)
	return s, true
}

// preconditionsMayHold reports whether a write's preconditions can hold on
// s, and the state with what holding them teaches (the rv and uid).
func (s state) preconditionsMayHold(in input) (state, bool) {
	if in.RV != 0 {
		if s.RV != 0 && s.RV != in.RV || s.RV == 0 && in.RV <= s.Last {
			return s, false
		}
		s.RV = in.RV
		s.Last = max(s.Last, in.RV)
	}
	if in.UID != "" {
		if s.UID != "" && s.UID != in.UID {
			return s, false
		}
		s.UID = in.UID
	}
	return s, true
}

// preconditionsMayFail reports whether a precondition of in can fail on s.
func (s state) preconditionsMayFail(in input) bool {
	return in.RV != 0 && (s.RV == 0 || s.RV != in.RV) || in.UID != "" && (s.UID == "" || s.UID != in.UID)
}

// step is the specification: the states a key can be in after in was
// answered out in state s (none: not linearizable here).
func step(s state, in input, out output) []state {
	if out.Result == resUnknown {
		next := []state{s} // it did not happen
		switch in.Kind {
		case opCreate:
			if !s.Exists {
				next = append(next, state{Exists: true, Value: in.Value, Last: s.Last})
			}
		case opUpdate:
			if !s.Exists && in.UID == "" { // a PUT creates
				next = append(next, state{Exists: true, Value: in.Value, Last: s.Last})
			}
			if p, ok := s.preconditionsMayHold(in); s.Exists && in.RV != 0 && ok {
				next = append(next, state{Exists: true, Value: in.Value, UID: p.UID, Last: max(p.Last, p.RV)})
			}
		case opPatch:
			if p, ok := s.preconditionsMayHold(in); s.Exists && ok {
				next = append(next, state{Exists: true, Value: in.Value, UID: p.UID, Last: max(p.Last, p.RV)})
			}
		case opDelete:
			if p, ok := s.preconditionsMayHold(in); s.Exists && ok {
				next = append(next, state{Last: max(p.Last, p.RV)})
			}
		}
		return next
	}
	if out.Result == resRefused {
		return []state{s} // the server promises it wrote nothing
	}
	one := func(s state, ok bool) []state {
		if !ok {
			return nil
		}
		return []state{s}
	}
	switch in.Kind {
	case opGet, opRead:
		switch {
		case !s.Exists:
			return one(s, out.Result == resNotFound)
		case out.Result != resOK || out.Value != s.Value:
			return nil
		}
		return one(s.bind(out.RV, out.UID))
	case opCreate:
		switch out.Result {
		case resExists:
			return one(s, s.Exists)
		case resOK:
			if s.Exists || out.RV <= s.Last || out.Value != in.Value {
				return nil
			}
			return []state{{Exists: true, Value: in.Value, RV: out.RV, UID: out.UID, Last: out.RV}}
		}
		return nil
	case opUpdate:
		// Kubernetes' Lease strategy: a PUT creates an absent Lease
		// (AllowCreateOnUpdate) unless it carries a uid precondition, which
		// an absent object fails; an update of an existing one needs a
		// resourceVersion (no AllowUnconditionalUpdate), checked after the
		// uid.
		if !s.Exists {
			switch out.Result {
			case resConflict:
				return one(s, in.UID != "")
			case resNotFound:
				// Leasehold's deliberate difference (internal/apiserver,
				// updateObject): a PUT racing the Lease's deletion is
				// answered the store's 404, where kube-apiserver would
				// re-read and create it.
				return one(s, in.UID == "")
			case resOK:
				if in.UID != "" || out.RV <= s.Last || out.Value != in.Value {
					return nil
				}
				return []state{{Exists: true, Value: in.Value, RV: out.RV, UID: out.UID, Last: out.RV}}
			}
			return nil
		}
		switch out.Result {
		case resExists:
			// A PUT that found the Lease absent and lost the race to create
			// it (kube-apiserver retries as an update: 409 Conflict or 422).
			return one(s, in.UID == "")
		case resInvalid:
			return one(s, in.RV == 0 && (in.UID == "" || s.UID == "" || s.UID == in.UID))
		}
		return updated(s, in, out)
	case opPatch:
		if !s.Exists {
			return one(s, out.Result == resNotFound)
		}
		return updated(s, in, out)
	case opDelete:
		switch out.Result {
		case resNotFound:
			return one(s, !s.Exists)
		case resConflict:
			return one(s, s.Exists && s.preconditionsMayFail(in))
		case resOK:
			p, ok := s.preconditionsMayHold(in)
			if !s.Exists || !ok {
				return nil
			}
			return []state{{Last: max(p.Last, p.RV)}}
		}
		return nil
	}
	return nil
}

// updated is step for an update or patch of an existing Lease answered
// ok or conflict.
func updated(s state, in input, out output) []state {
	switch out.Result {
	case resConflict:
		if s.preconditionsMayFail(in) {
			return []state{s}
		}
	case resOK:
		p, ok := s.preconditionsMayHold(in)
		if !ok || out.Value != in.Value || out.RV <= max(p.Last, p.RV) || p.UID != "" && p.UID != out.UID {
			return nil
		}
		return []state{{Exists: true, Value: in.Value, RV: out.RV, UID: out.UID, Last: out.RV}}
	}
	return nil
}

// leaseModel is step as porcupine's model, partitioned by Lease name.
var leaseModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(input).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() []interface{} { return []interface{}{state{}} },
	Step: func(s, in, out interface{}) []interface{} {
		next := step(s.(state), in.(input), out.(output))
		r := make([]interface{}, len(next))
		for i, n := range next {
			r[i] = n
		}
		return r
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		var pre string
		if i.RV != 0 {
			pre += fmt.Sprintf(" if rv=%d", i.RV)
		}
		if i.UID != "" {
			pre += fmt.Sprintf(" if uid=%.8s", i.UID)
		}
		res := o.Result
		if o.Result == resOK && (o.RV != 0 || o.Value != "") {
			res = fmt.Sprintf("%s rv=%d uid=%.8s", o.Value, o.RV, o.UID)
		}
		return fmt.Sprintf("%s(%s%s%s) -> %s", i.Kind, i.Key, valueArg(i.Value), pre, res)
	},
	DescribeState: func(s interface{}) string { return s.(state).String() },
}

func valueArg(v string) string {
	if v == "" {
		return ""
	}
	return ", " + v
}
