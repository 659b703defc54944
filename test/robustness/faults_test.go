package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Fault kinds.
const (
	faultKill  = "kill -9 and restart"
	faultPause = "SIGSTOP/SIGCONT"
	faultDisk  = "disk full and freed"
	// Crashes at the embedded store's failpoints (failpoint_test.go).
	faultBeforeSync = "crash before a batch is synced"
	faultAfterSync  = "crash after a batch is synced, before its answer"
	faultCompaction = "crash during compaction"
	// etcd mode.
	faultEtcdKill   = "kill -9 and restart of an etcd member"
	faultEtcdQuorum = "etcd quorum lost (two members SIGSTOPped) and back"
)

// faultPlan sizes the injector: a fault every MinGap to MaxGap, a pause
// lasting up to MaxPause, a restart up to MaxDown after a kill.
type faultPlan struct {
	MinGap, MaxGap, MaxPause, MaxDown time.Duration
	// MaxFull, when not zero, adds the disk filling up (the data dir is on
	// a small tmpfs: FillDir) for up to MaxFull, then freed.
	MaxFull time.Duration
	FillDir string
	// MaxCut bounds a replica's cut from etcd (partition_test.go); zero
	// means MaxPause.
	MaxCut time.Duration
	// FailpointBinary, when set, is a failpoint build of leasehold
	// (failpointLeasehold) that the server runs; crashes at each of
	// its failpoints are then among the faults.
	FailpointBinary string
}

// fill appends to path until the file system answers ENOSPC.
func fill(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("filler file: %w", err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10} {
		buf := make([]byte, size)
		for {
			_, err := f.Write(buf)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return fmt.Errorf("filling %s: %w", path, err)
			}
		}
	}
	return nil
}

// mountTmpfs mounts a tmpfs of size on a fresh directory and unmounts it
// when the test ends (after the server on it stopped: its cleanup is
// registered later, so runs first). It needs root; without it the disk
// fault is not injected, and the test says so.
func mountTmpfs(t *testing.T, size string) (string, bool) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Logf("NOT TESTED: the disk filling up needs a %s tmpfs (root or CAP_SYS_ADMIN): mount: %v", size, err)
		return "", false
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir, true
}

// injector injects faults into the servers (and etcd members) at random
// moments until ctx ends, and leaves them running and resumed.
type injector struct {
	srvs []*server
	etcd []*etcdMember
	h    *history
	rng  *rand.Rand
	plan faultPlan
	// links are the etcd replicas' proxies (partition_test.go); deck is
	// draw's.
	links map[*server]*etcdLink
	deck  []string

	mu     sync.Mutex
	counts map[string]int
	// reached counts, per failpoint, the crashes there (a failpoint fault
	// is counted in counts when armed, here when the server died at it).
	reached map[string]int
	log     []string
	err     error
	// crashes are the server's own exits (a violation), found after a
	// fault; the server was restarted each time. A replica that did not
	// recover from a cut from etcd is one too.
	crashes []string
}

func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int63n(int64(hi-lo)+1))
}

func (in *injector) run(ctx context.Context) {
	for {
		sleep(ctx, in.between(in.plan.MinGap, in.plan.MaxGap))
		if ctx.Err() != nil {
			return
		}
		kinds := []string{faultKill, faultPause}
		if in.plan.MaxFull > 0 {
			kinds = append(kinds, faultDisk)
		}
		if len(in.etcd) > 0 {
			kinds = append(kinds, faultEtcdKill, faultEtcdQuorum)
		}
		if len(in.links) > 0 {
			kinds = append(kinds, faultEtcdCut, faultEtcdBlackhole, faultEtcdMemberSilent)
		}
		if in.plan.FailpointBinary != "" {
			for _, fp := range embeddedFailpoints {
				kinds = append(kinds, fp.kind)
			}
		}
		kind := in.draw(kinds)
		srv := in.srvs[in.rng.Intn(len(in.srvs))]
		start := time.Now()
		d, err := in.inject(kind, srv)
		if err != nil {
			in.mu.Lock()
			in.err = err
			in.mu.Unlock()
			return
		}
		for _, s := range in.srvs {
			crashed, cerr := s.exitedUnexpectedly()
			if !crashed {
				continue
			}
			in.mu.Lock()
			in.crashes = append(in.crashes, fmt.Sprintf("the server on %s exited by itself (%v) during or after %s at %.3fs", s.addr(), cerr, kind, float64(in.h.now())/1e9))
			in.mu.Unlock()
			in.killed()
			if err := s.start(); err != nil {
				in.mu.Lock()
				in.err = fmt.Errorf("restart after a crash: %w", err)
				in.mu.Unlock()
				return
			}
		}
		in.mu.Lock()
		in.counts[kind]++
		in.log = append(in.log, fmt.Sprintf("%.3fs %s (%v; back after %v)", float64(in.h.now())/1e9, kind, d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond)))
		in.mu.Unlock()
	}
}

// killed records a kill as the bound of unknown writes, but only on the
// embedded store: with etcd, a replica's transaction may still reach etcd
// after the replica died.
func (in *injector) killed() {
	if len(in.etcd) == 0 {
		in.h.killed()
	}
}

// inject makes one fault on srv (or etcd) and returns how long it lasted.
func (in *injector) inject(kind string, srv *server) (time.Duration, error) {
	var d time.Duration
	switch kind {
	case faultKill:
		d = in.between(0, in.plan.MaxDown)
		srv.kill()
		in.killed()
		time.Sleep(d)
		if err := srv.start(); err != nil {
			return d, fmt.Errorf("restart after kill: %w", err)
		}
	case faultPause:
		d = in.between(100*time.Millisecond, in.plan.MaxPause)
		srv.pause()
		time.Sleep(d)
		srv.resume()
	case faultDisk:
		d = in.between(200*time.Millisecond, in.plan.MaxFull)
		filler := filepath.Join(in.plan.FillDir, "filler")
		if err := fill(filler); err != nil {
			return d, err
		}
		time.Sleep(d)
		if err := os.Remove(filler); err != nil {
			return d, fmt.Errorf("freeing the disk: %w", err)
		}
	case faultBeforeSync, faultAfterSync, faultCompaction:
		name := failpointOf(kind)
		start := time.Now()
		reached, err := in.crashAtFailpoint(srv, name)
		d = time.Since(start)
		if err != nil {
			return d, err
		}
		in.mu.Lock()
		if reached {
			in.reached[name]++
		} else {
			in.log = append(in.log, fmt.Sprintf("%.3fs failpoint %s armed for %v and not reached", float64(in.h.now())/1e9, name, failpointWait))
		}
		in.mu.Unlock()
	case faultEtcdKill:
		// A member at random: the leader a third of the time.
		d = in.between(0, in.plan.MaxDown)
		m := in.etcd[in.rng.Intn(len(in.etcd))]
		m.kill()
		time.Sleep(d)
		if err := m.start(); err != nil {
			return d, err
		}
	case faultEtcdCut, faultEtcdBlackhole:
		return in.cut(kind, srv)
	case faultEtcdMemberSilent:
		return in.silence(srv)
	case faultEtcdQuorum:
		// Two of three members frozen: no quorum until they resume.
		d = in.between(100*time.Millisecond, in.plan.MaxPause)
		i := in.rng.Intn(len(in.etcd))
		frozen := []*etcdMember{in.etcd[i], in.etcd[(i+1)%len(in.etcd)]}
		for _, m := range frozen {
			m.signal(syscall.SIGSTOP)
		}
		time.Sleep(d)
		for _, m := range frozen {
			m.signal(syscall.SIGCONT)
		}
	}
	return d, nil
}
