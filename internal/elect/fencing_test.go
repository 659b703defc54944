package elect

import (
	"testing"

	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

func TestAcquisitionToken(t *testing.T) {
	rec := func(holder string, transitions int) rl.LeaderElectionRecord {
		return rl.LeaderElectionRecord{HolderIdentity: holder, LeaderTransitions: transitions}
	}
	for name, tc := range map[string]struct {
		acq   acquisition
		token int64
		ok    bool
	}{
		"created":                 {acquisition{created: true, written: rec("me", 0)}, 0, true},
		"takeover from another":   {acquisition{written: rec("me", 5), previous: rec("other", 4)}, 5, true},
		"after a release":         {acquisition{written: rec("me", 3), previous: rec("", 2)}, 3, true},
		"same identity, kept":     {acquisition{written: rec("me", 4), previous: rec("me", 4)}, 0, false},
		"same identity, from 0":   {acquisition{written: rec("me", 0), previous: rec("me", 0)}, 0, false},
		"lower than before (bug)": {acquisition{written: rec("me", 1), previous: rec("x", 2)}, 0, false},
	} {
		token, ok := acquisitionToken(tc.acq)
		if token != tc.token || ok != tc.ok {
			t.Errorf("%s: got %d %v, want %d %v", name, token, ok, tc.token, tc.ok)
		}
	}
}
