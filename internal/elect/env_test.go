package elect

import (
	"slices"
	"testing"
)

func TestCommandEnvOverridesInheritedValues(t *testing.T) {
	base := []string{"HOME=/root", "LEASEHOLD_FENCING_TOKEN=99", "LEASEHOLD_IDENTITY=outer", "X=a=b"}
	got := commandEnv(base, "host_1", "kube-system/web", 7)
	want := []string{"HOME=/root", "X=a=b", "LEASEHOLD_IDENTITY=host_1", "LEASEHOLD_LEASE=kube-system/web", "LEASEHOLD_FENCING_TOKEN=7"}
	if !slices.Equal(got, want) {
		t.Errorf("env\n got %q\nwant %q", got, want)
	}
}
