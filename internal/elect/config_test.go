package elect

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestParseLeaseRef(t *testing.T) {
	ns, name, err := ParseLeaseRef("kube-system/my.lease-1")
	if err != nil || ns != "kube-system" || name != "my.lease-1" {
		t.Errorf("got %q %q %v", ns, name, err)
	}
	for _, bad := range []string{"", "name", "/name", "ns/", "ns/a/b", "Kube/x", "ns/UPPER", "n_s/x"} {
		if _, _, err := ParseLeaseRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDefaultIdentityIsHostnameAndUUID(t *testing.T) {
	a, err := DefaultIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DefaultIdentity()
	if a == b {
		t.Errorf("two default identities are equal: %q", a)
	}
	i := strings.LastIndex(a, "_")
	if i <= 0 || len(a)-i-1 != 36 {
		t.Errorf("identity %q is not <hostname>_<uuid>", a)
	}
}

func validConfig(t *testing.T) Config {
	t.Helper()
	// A real clientset for an address nobody listens on: Validate only
	// checks that one is given and never calls it.
	c, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Client: c, Namespace: "ns", Name: "l", Identity: "me",
		LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline,
		RetryPeriod: DefaultRetryPeriod, GracePeriod: DefaultGracePeriod,
		Command: []string{"true"}, Logger: slog.New(slog.DiscardHandler),
	}
}

func TestValidate(t *testing.T) {
	if err := func() error { c := validConfig(t); return c.Validate() }(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	for name, tc := range map[string]struct {
		mut  func(*Config)
		want string
	}{
		"no command":                      {func(c *Config) { c.Command = nil }, "command"},
		"empty identity":                  {func(c *Config) { c.Identity = "" }, "identity"},
		"lease <= renew":                  {func(c *Config) { c.LeaseDuration = 10 * time.Second }, "greater than renew deadline"},
		"renew <= 1.2 x retry":            {func(c *Config) { c.RenewDeadline = 2400 * time.Millisecond }, "retry period"},
		"fractional lease":                {func(c *Config) { c.LeaseDuration = 15500 * time.Millisecond }, "whole number of seconds"},
		"negative grace":                  {func(c *Config) { c.GracePeriod = -time.Second }, "grace period"},
		"zero retry":                      {func(c *Config) { c.RetryPeriod = 0 }, "must be positive"},
		"no client":                       {func(c *Config) { c.Client = nil }, "client"},
		"no logger":                       {func(c *Config) { c.Logger = nil }, "logger"},
		"no lease name":                   {func(c *Config) { c.Name = "" }, "lease namespace and name"},
		"coordinated, no binary version":  {func(c *Config) { c.Coordinated = &Coordination{EmulationVersion: "1.30.0"} }, "coordinated.binaryVersion: Required"},
		"coordinated, emulation > binary": {func(c *Config) { c.Coordinated = &Coordination{BinaryVersion: "1.30.0", EmulationVersion: "1.31.0"} }, "must be greater than or equal to `emulationVersion`"},
		"coordinated, not semver":         {func(c *Config) { c.Coordinated = &Coordination{BinaryVersion: "v1.30", EmulationVersion: "1.30.0"} }, "must be a valid semantic version"},
		"coordinated, no emulation":       {func(c *Config) { c.Coordinated = &Coordination{BinaryVersion: "1.30.0"} }, "must be specified when `strategy` is 'OldestEmulationVersion'"},
		"coordinated, identity not a key": {func(c *Config) {
			c.Coordinated = &Coordination{BinaryVersion: "1.30.0", EmulationVersion: "1.30.0"}
			c.Identity = "a/b"
		}, "cannot name a LeaseCandidate"},
	} {
		c := validConfig(t)
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted the config", name)
		}
	}
}

func TestValidateAcceptsCoordinated(t *testing.T) {
	c := validConfig(t)
	c.Identity = "host-1_0b6c1a4e-6f5e-4c55-9a77-2f1f7c0f2d11"
	c.Coordinated = &Coordination{BinaryVersion: "1.33.0", EmulationVersion: "1.31.0"}
	if err := c.Validate(); err != nil {
		t.Errorf("coordinated config rejected: %v", err)
	}
}

func TestValidateAcceptsShortTestTimings(t *testing.T) {
	c := validConfig(t)
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 4*time.Second, 3*time.Second, time.Second
	if err := c.Validate(); err != nil {
		t.Errorf("4s/3s/1s rejected: %v", err)
	}
}
