package election

import "time"

// ControllerName is kube-apiserver's name for this controller; it is used in
// logs.
const ControllerName = "leader-election-controller"

// Kubernetes' constants (pkg/controlplane/controller/leaderelection).
const (
	// DefaultRequeueInterval is how often a Lease with candidates is looked
	// at again when nothing changed.
	DefaultRequeueInterval = 5 * time.Second
	// DefaultElectionDuration is how long candidates have to answer a ping,
	// and how recent a renewal must be to count as an answer.
	DefaultElectionDuration = 5 * time.Second
	// DefaultLeaseDurationSeconds is the leaseDurationSeconds the controller
	// writes when it creates or assigns a Lease.
	DefaultLeaseDurationSeconds = 5
	// DefaultCandidateValidity is how long a candidate's renewTime keeps it
	// admissible; at half of it an election is forced so that every
	// candidate is pinged and renews before the garbage collector would
	// delete it.
	DefaultCandidateValidity = 30 * time.Minute
	// DefaultWorkers is how many Leases are reconciled at once.
	DefaultWorkers = 2
)

// Config tunes the controller; zero fields take the defaults above (tests
// shorten them).
type Config struct {
	RequeueInterval      time.Duration
	ElectionDuration     time.Duration
	LeaseDurationSeconds int32
	CandidateValidity    time.Duration
	Workers              int
}

func (c Config) withDefaults() Config {
	if c.RequeueInterval <= 0 {
		c.RequeueInterval = DefaultRequeueInterval
	}
	if c.ElectionDuration <= 0 {
		c.ElectionDuration = DefaultElectionDuration
	}
	if c.LeaseDurationSeconds <= 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.CandidateValidity <= 0 {
		c.CandidateValidity = DefaultCandidateValidity
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	return c
}
