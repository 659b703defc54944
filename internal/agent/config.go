package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// Kubelet defaults (pkg/kubelet/apis/config/v1beta1/defaults.go).
const (
	DefaultNodeLeaseDurationSeconds  int32 = 40
	DefaultNodeStatusUpdateFrequency       = 10 * time.Second
	DefaultNodeStatusReportFrequency       = 5 * time.Minute

	// renewIntervalFraction is the kubelet's nodeLeaseRenewIntervalFraction:
	// the lease is renewed four times per lease duration.
	renewIntervalFraction = 0.25
)

// Config says which node the agent stands for and how often it reports.
// The zero value is not usable; start from DefaultConfig.
type Config struct {
	// NodeName names the Node, its Lease and the lease holder.
	NodeName string
	// LeaseDurationSeconds is written into the lease; renewals happen every
	// quarter of it.
	LeaseDurationSeconds int32
	// NodeStatusUpdateFrequency is how often node status is computed (and
	// the Ready heartbeat refreshed if a report is due).
	NodeStatusUpdateFrequency time.Duration
	// NodeStatusReportFrequency is how often node status is PATCHed when
	// nothing changed.
	NodeStatusReportFrequency time.Duration
	// NodeLabels are added to the Node at registration, besides the
	// kubernetes.io/hostname, os and arch labels.
	NodeLabels map[string]string
	// RegisterNode makes the agent create its Node; when false it only
	// heartbeats a Node that someone else registered (kubelet --register-node).
	RegisterNode bool
	// Version is reported as status.nodeInfo.kubeletVersion.
	Version string
	// OnRepeatedHeartbeatFailure, if set, is called when a heartbeat fails
	// again after a first failure; the command closes the heartbeat client's
	// idle connections there so a dead HTTP/2 connection is not reused.
	OnRepeatedHeartbeatFailure func()
	// OnRenew, if set, observes every lease renewal request (each PUT of
	// the lease, retries included; not the GET or create that recover a
	// missing lease): how long it took and its error. It is called on the
	// lease goroutine, so it must be quick; `leasehold bench fleet` records
	// renewal latency through it.
	OnRenew func(d time.Duration, err error)
}

// DefaultConfig returns the kubelet's defaults for node name.
func DefaultConfig(nodeName string) Config {
	return Config{
		NodeName:                  nodeName,
		LeaseDurationSeconds:      DefaultNodeLeaseDurationSeconds,
		NodeStatusUpdateFrequency: DefaultNodeStatusUpdateFrequency,
		NodeStatusReportFrequency: DefaultNodeStatusReportFrequency,
		RegisterNode:              true,
		Version:                   "leasehold-v0.0.0-dev",
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	} else if msgs := validation.IsDNS1123Subdomain(c.NodeName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("node name %q is not a valid DNS-1123 subdomain: %v", c.NodeName, msgs))
	}
	if c.LeaseDurationSeconds <= 0 {
		errs = append(errs, fmt.Errorf("lease duration must be greater than 0 seconds, got %d", c.LeaseDurationSeconds))
	}
	if c.NodeStatusUpdateFrequency <= 0 {
		errs = append(errs, fmt.Errorf("node status update frequency must be positive, got %s", c.NodeStatusUpdateFrequency))
	}
	if c.NodeStatusReportFrequency <= 0 {
		errs = append(errs, fmt.Errorf("node status report frequency must be positive, got %s", c.NodeStatusReportFrequency))
	}
	if fieldErrs := metav1validation.ValidateLabels(c.NodeLabels, field.NewPath("nodeLabels")); len(fieldErrs) > 0 {
		errs = append(errs, fmt.Errorf("invalid node labels: %w", fieldErrs.ToAggregate()))
	}
	if err := restrictedNodeLabels(c.NodeLabels); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restrictedNodeLabels refuses, with the kubelet's startup error, labels in
// the kubernetes.io and k8s.io namespaces (subdomains included) that are not
// kubelet labels: the NodeRestriction admission plugin refuses a Node
// carrying them from its own node, so an agent started with one could never
// register. The kubelet's own list (k8s.io/kubelet) decides, as it does for
// the admission plugin, so the agent and the server cannot drift apart.
func restrictedNodeLabels(labels map[string]string) error {
	var unknown []string
	for k := range labels {
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v\n--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
		unknown, strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
}

// isKubernetesLabel reports whether key's prefix is kubernetes.io or k8s.io,
// or a subdomain of either.
func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// RenewInterval is how often the lease is renewed: a quarter of its duration.
func (c Config) RenewInterval() time.Duration {
	return time.Duration(float64(time.Duration(c.LeaseDurationSeconds)*time.Second) * renewIntervalFraction)
}

// HeartbeatTimeout bounds each heartbeat request, as the kubelet's heartbeat
// client does: min(node status update frequency, lease duration). A request
// that outlives it would overlap the next heartbeat.
func (c Config) HeartbeatTimeout() time.Duration {
	return min(c.NodeStatusUpdateFrequency, time.Duration(c.LeaseDurationSeconds)*time.Second)
}
