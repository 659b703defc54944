package connguard

import (
	"fmt"
	"math"
	"syscall"
)

// minReservedFiles is the smallest reserve of descriptors kept from
// clients: the embedded store's Pebble keeps up to 1,000 table files open
// (its default MaxOpenFiles), and 280 more cover its WAL, manifest, lock
// and directories, the loopback and etcd clients, and the server's own
// files (certificates, kubeconfig, pprof).
const minReservedFiles = 1280

// fileLimits is what the process may open and how it is shared out.
type fileLimits struct {
	soft, hard  uint64 // RLIMIT_NOFILE after raising the soft limit
	reserved    int    // descriptors kept from clients
	connections int    // open client connections allowed
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard one and returns
// both. Go's runtime does the same at start since Go 1.19; doing it here
// too keeps the limit this package derives from independent of that, and
// reports what it is.
func raiseFileLimit() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return lim.Cur, lim.Max, fmt.Errorf("raising RLIMIT_NOFILE from %d to %d: %w", lim.Cur, lim.Max, err)
		}
		lim = raised
	}
	return lim.Cur, lim.Max, nil
}

// shareFiles derives the connection limit from a soft descriptor limit.
// The reserve is reserved if set, else the larger of minReservedFiles and a
// tenth of the limit, but never more than half of it (a process held to a
// small limit still serves). maxConns, if set, lowers the limit further;
// clamped reports that it asked for more than the descriptors allow.
func shareFiles(soft uint64, reserved, maxConns int) (limits fileLimits, clamped bool, err error) {
	files := int(min(soft, math.MaxInt32))
	if reserved == 0 {
		reserved = min(max(minReservedFiles, files/10), files/2)
	}
	avail := files - reserved
	if avail < 1 {
		return fileLimits{}, false, fmt.Errorf("RLIMIT_NOFILE of %d leaves no descriptors for connections after reserving %d", files, reserved)
	}
	limit := avail
	switch {
	case maxConns > avail:
		clamped = true
	case maxConns > 0:
		limit = maxConns
	}
	return fileLimits{soft: soft, reserved: reserved, connections: limit}, clamped, nil
}
