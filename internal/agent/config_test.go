package agent

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsKubeletDefaults(t *testing.T) {
	c := DefaultConfig("node-a")
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	if c.LeaseDurationSeconds != 40 || c.NodeStatusUpdateFrequency != 10*time.Second || c.NodeStatusReportFrequency != 5*time.Minute || !c.RegisterNode {
		t.Fatalf("defaults = %+v, want kubelet's 40s / 10s / 5m / register", c)
	}
	if got := c.RenewInterval(); got != 10*time.Second {
		t.Fatalf("RenewInterval() = %s, want 10s", got)
	}
	if got := c.HeartbeatTimeout(); got != 10*time.Second {
		t.Fatalf("HeartbeatTimeout() = %s, want 10s", got)
	}
}

func TestRenewIntervalAndHeartbeatTimeout(t *testing.T) {
	tests := []struct {
		duration      int32
		update        time.Duration
		wantRenew     time.Duration
		wantHBTimeout time.Duration
	}{
		{40, 10 * time.Second, 10 * time.Second, 10 * time.Second},
		{10, 10 * time.Second, 2500 * time.Millisecond, 10 * time.Second},
		{4, 10 * time.Second, time.Second, 4 * time.Second},
		{40, time.Minute, 10 * time.Second, 40 * time.Second},
		{40, time.Second, 10 * time.Second, time.Second},
	}
	for _, tt := range tests {
		c := DefaultConfig("n")
		c.LeaseDurationSeconds = tt.duration
		c.NodeStatusUpdateFrequency = tt.update
		if got := c.RenewInterval(); got != tt.wantRenew {
			t.Errorf("duration %d: RenewInterval() = %s, want %s", tt.duration, got, tt.wantRenew)
		}
		if got := c.HeartbeatTimeout(); got != tt.wantHBTimeout {
			t.Errorf("duration %d, update %s: HeartbeatTimeout() = %s, want %s", tt.duration, tt.update, got, tt.wantHBTimeout)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // substring; "" means valid
	}{
		{"valid dotted name", func(c *Config) { c.NodeName = "ip-10-29-79-205.ap-northeast-2.compute.internal" }, ""},
		{"empty name", func(c *Config) { c.NodeName = "" }, "node name is required"},
		{"upper-case name", func(c *Config) { c.NodeName = "Node_A" }, "not a valid DNS-1123 subdomain"},
		{"zero lease duration", func(c *Config) { c.LeaseDurationSeconds = 0 }, "lease duration must be greater than 0"},
		{"negative update frequency", func(c *Config) { c.NodeStatusUpdateFrequency = -time.Second }, "update frequency must be positive"},
		{"zero report frequency", func(c *Config) { c.NodeStatusReportFrequency = 0 }, "report frequency must be positive"},
		{"good labels", func(c *Config) { c.NodeLabels = map[string]string{"topology.kubernetes.io/zone": "z1"} }, ""},
		{"bad label value", func(c *Config) { c.NodeLabels = map[string]string{"zone": "has space"} }, "invalid node labels"},
		{"kubelet labels in kubernetes.io", func(c *Config) {
			c.NodeLabels = map[string]string{"node.kubernetes.io/instance-type": "m5", "kubelet.kubernetes.io/x": "y", "kubernetes.io/hostname": "h", "example.com/role": "db"}
		}, ""},
		{"node-restriction label", func(c *Config) {
			c.NodeLabels = map[string]string{"node-restriction.kubernetes.io/pool": "a"}
		}, "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-restriction.kubernetes.io/pool]\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set (beta.kubernetes.io/arch, "},
		{"role and k8s.io labels, sorted", func(c *Config) {
			c.NodeLabels = map[string]string{"node-role.kubernetes.io/worker": "", "foo.k8s.io/bar": "1", "k8s.io/x": "2", "role": "worker"}
		}, "labels specified with --node-labels: [foo.k8s.io/bar k8s.io/x node-role.kubernetes.io/worker]\n"},
		{"several errors at once", func(c *Config) { c.NodeName = ""; c.LeaseDurationSeconds = -1 }, "lease duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig("node-a")
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
