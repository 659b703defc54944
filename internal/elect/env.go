package elect

import (
	"strconv"
	"strings"
)

// Names of the environment variables given to the command.
const (
	EnvIdentity     = "LEASEHOLD_IDENTITY"
	EnvLease        = "LEASEHOLD_LEASE"
	EnvFencingToken = "LEASEHOLD_FENCING_TOKEN"
)

// commandEnv returns base with the elector's variables set, replacing any
// inherited value of the same name so that the command can never see a
// stale token from an enclosing elector.
func commandEnv(base []string, identity, lease string, token int64) []string {
	own := map[string]string{
		EnvIdentity:     identity,
		EnvLease:        lease,
		EnvFencingToken: strconv.FormatInt(token, 10),
	}
	env := make([]string, 0, len(base)+len(own))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ours := own[name]; ours {
			continue
		}
		env = append(env, kv)
	}
	for _, name := range []string{EnvIdentity, EnvLease, EnvFencingToken} {
		env = append(env, name+"="+own[name])
	}
	return env
}
