package elect

// Exit codes of an elector. The command's own exit code is passed through
// when it exits by itself, so a command that uses one of these values is
// indistinguishable from the elector's own reason; the values follow
// sysexits.h and the shell conventions to make that unlikely.
const (
	// ExitOK: the command exited with 0, or the elector was asked to stop
	// (SIGTERM/SIGINT) and stopped the command and released the lease.
	ExitOK = 0
	// ExitUsage: invalid flags or configuration (EX_USAGE).
	ExitUsage = 64
	// ExitUnavailable: the API server could not be reached at start
	// (EX_UNAVAILABLE).
	ExitUnavailable = 69
	// ExitLeadershipLost: leadership was lost (renewal failed or another
	// holder took over) and the command was stopped (EX_TEMPFAIL: restart me).
	ExitLeadershipLost = 75
	// ExitConfig: the kubeconfig could not be loaded or the server rejected
	// our credentials or permissions (EX_CONFIG).
	ExitConfig = 78
	// ExitCannotExecute: the command exists but could not be executed (as
	// shells report it).
	ExitCannotExecute = 126
	// ExitNotFound: the command was not found (as shells report it).
	ExitNotFound = 127
)

// ExitCodesHelp describes the exit codes for the command's help text.
const ExitCodesHelp = `Exit codes:
  0    the command exited with 0, or elect was stopped by SIGTERM/SIGINT
       (the command was stopped and the lease released)
  N    the command's own exit code when it exits by itself (128+signal
       when it was killed by a signal)
  64   invalid flags or configuration
  69   the API server could not be reached at start
  75   leadership was lost; the command was stopped
  78   the kubeconfig could not be loaded, or the server rejected the
       credentials or permissions
  126  the command could not be executed
  127  the command was not found`
