package registry

import "testing"

func TestIsKeyAgreesWithKey(t *testing.T) {
	namespaced := &Resource{StorageResource: "leases", Namespaced: true}
	cluster := &Resource{StorageResource: "minions"}
	for _, tc := range []struct {
		res       *Resource
		ns, name  string
		key       string
		wantMatch bool
	}{
		{namespaced, "kube-node-lease", "n1", "", true},
		{cluster, "", "n1", "", true},
		{namespaced, "kube-node-lease", "n1", "/registry/leases/kube-node-lease/n10", false},
		{namespaced, "kube-node-lease", "n1", "/registry/leases/kube-node-leas/n1", false},
		{namespaced, "ns", "a/b", "/registry/leases/ns/a/b", true},
		{namespaced, "ns", "b", "/registry/leases/ns/a/b", false},
		{cluster, "", "n1", "/registry/minionsx/n1", false},
		{cluster, "", "n1", "/registry/minions/n1/", false},
		{cluster, "", "n1", "/registry/minions", false},
		{cluster, "", "", "/registry/minions/", true},
	} {
		key := tc.key
		if key == "" {
			key = tc.res.Key(tc.ns, tc.name)
		}
		if got := tc.res.IsKey(key, tc.ns, tc.name); got != tc.wantMatch {
			t.Errorf("IsKey(%q, %q, %q) = %v, want %v", key, tc.ns, tc.name, got, tc.wantMatch)
		}
		if want := key == tc.res.Key(tc.ns, tc.name); want != tc.wantMatch {
			t.Errorf("test case %q: Key says %v", key, want)
		}
	}
}
