package garbagecollector

import (
	"maps"

	"k8s.io/apimachinery/pkg/types"
)

// dependentSet is the dependents of one owner: dependent key → the uid its
// reference names. Almost every owner has exactly one dependent (a Node
// and its Lease), so the first is held inline and a map exists only once
// there are two: a map per owner was most of the graph's memory at 100,000
// nodes. The zero value is empty.
type dependentSet struct {
	oneKey string
	oneUID types.UID
	// more holds every dependent once there have been two at once (oneKey
	// is then empty); nil before.
	more map[string]types.UID
}

func (s *dependentSet) len() int {
	switch {
	case s.more != nil:
		return len(s.more)
	case s.oneKey != "":
		return 1
	}
	return 0
}

// put records that key references the owner with uid.
func (s *dependentSet) put(key string, uid types.UID) {
	switch {
	case s.more != nil:
		s.more[key] = uid
	case s.oneKey == "" || s.oneKey == key:
		s.oneKey, s.oneUID = key, uid
	default:
		s.more = map[string]types.UID{s.oneKey: s.oneUID, key: uid}
		s.oneKey, s.oneUID = "", ""
	}
}

// remove forgets key.
func (s *dependentSet) remove(key string) {
	switch {
	case s.more != nil:
		delete(s.more, key)
	case s.oneKey == key:
		s.oneKey, s.oneUID = "", ""
	}
}

// copy returns the dependents as a map the caller owns (nil if none).
func (s *dependentSet) copy() map[string]types.UID {
	switch {
	case s.more != nil:
		if len(s.more) == 0 {
			return nil
		}
		return maps.Clone(s.more)
	case s.oneKey != "":
		return map[string]types.UID{s.oneKey: s.oneUID}
	}
	return nil
}

// references tells whether any dependent's reference names uid.
func (s *dependentSet) references(uid types.UID) bool {
	if s.more == nil {
		return s.oneKey != "" && s.oneUID == uid
	}
	for _, u := range s.more {
		if u == uid {
			return true
		}
	}
	return false
}
