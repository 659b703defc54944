package elect

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
)

// Config is everything an Elector needs; the zero values of the durations
// are invalid, use Defaults to fill them.
type Config struct {
	// Client talks to the API server holding the Lease.
	Client kubernetes.Interface
	// WatchClient, when not nil, is used instead of Client for the watch
	// on the Lease: a watch is a long-running request, which a client
	// whose timeout bounds every renewal would cut short.
	WatchClient kubernetes.Interface
	// Namespace and Name identify the Lease.
	Namespace, Name string
	// Identity is written as the Lease's holderIdentity; it must be unique
	// among the candidates (see DefaultIdentity).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// leader-election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// GracePeriod is how long the command has to exit after SIGTERM before
	// it is sent SIGKILL.
	GracePeriod time.Duration
	// Command is the program and its arguments.
	Command []string
	// Stdout and Stderr receive the command's output (the elector's own
	// os.Stdout and os.Stderr in the CLI).
	Stdout, Stderr io.Writer
	// HealthListener, when not nil, is served with /healthz and /readyz
	// until Run returns; Run closes it.
	HealthListener net.Listener
	// Logger receives the elector's and client-go's logs.
	Logger *slog.Logger
	// Coordinated, when not nil, joins coordinated leader election as a
	// LeaseCandidate instead of competing for the Lease directly.
	Coordinated *Coordination
}

// Defaults are client-go's and kube-controller-manager's timings, and the
// grace period of the elect command.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	DefaultGracePeriod   = 10 * time.Second
)

// watchClient is the client for the watch on the Lease.
func (c *Config) watchClient() kubernetes.Interface {
	if c.WatchClient != nil {
		return c.WatchClient
	}
	return c.Client
}

// DefaultIdentity is `<hostname>_<uuid>` as kube-controller-manager builds
// it: the uuid keeps two electors on the same host apart.
func DefaultIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("get hostname for the default identity: %w", err)
	}
	return host + "_" + uuid.NewString(), nil
}

// ParseLeaseRef splits "NS/NAME" and checks both parts are valid names for
// a namespace and a Lease.
func ParseLeaseRef(ref string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("lease %q: want NAMESPACE/NAME", ref)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return "", "", fmt.Errorf("lease %q: invalid namespace: %s", ref, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
		return "", "", fmt.Errorf("lease %q: invalid name: %s", ref, strings.Join(msgs, "; "))
	}
	return ns, n, nil
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("no API client"))
	}
	if c.Namespace == "" || c.Name == "" {
		errs = append(errs, errors.New("lease namespace and name are required"))
	}
	if c.Identity == "" {
		errs = append(errs, errors.New("identity must not be empty"))
	}
	if len(c.Command) == 0 || c.Command[0] == "" {
		errs = append(errs, errors.New("a command to run is required (after --)"))
	}
	errs = append(errs, validateTimings(c.LeaseDuration, c.RenewDeadline, c.RetryPeriod, c.GracePeriod)...)
	if c.Logger == nil {
		errs = append(errs, errors.New("no logger"))
	}
	if c.Coordinated != nil {
		if err := c.Coordinated.validate(c.Name); err != nil {
			errs = append(errs, err)
		}
		if msgs := validation.IsConfigMapKey(c.Identity); c.Identity != "" && len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("identity %q cannot name a LeaseCandidate: %s", c.Identity, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// validateTimings applies client-go's rules (which NewLeaderElector would
// otherwise report one at a time) plus the Lease's: leaseDurationSeconds is
// a whole number of seconds, so the duration must be one.
func validateTimings(lease, renew, retry, grace time.Duration) []error {
	var errs []error
	if lease < time.Second || lease%time.Second != 0 {
		errs = append(errs, fmt.Errorf("lease duration %v must be a whole number of seconds, at least 1s", lease))
	}
	if renew <= 0 || retry <= 0 {
		errs = append(errs, fmt.Errorf("renew deadline %v and retry period %v must be positive", renew, retry))
	}
	if lease <= renew {
		errs = append(errs, fmt.Errorf("lease duration %v must be greater than renew deadline %v", lease, renew))
	}
	if float64(renew) <= leaderelection.JitterFactor*float64(retry) {
		errs = append(errs, fmt.Errorf("renew deadline %v must be greater than %v x retry period %v", renew, leaderelection.JitterFactor, retry))
	}
	if grace < 0 {
		errs = append(errs, fmt.Errorf("grace period %v must not be negative", grace))
	}
	return errs
}
