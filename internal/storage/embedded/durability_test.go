package embedded

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// crashChildEnv, when set to a directory, makes the test binary act as the
// writer that TestDurabilityKill9 kills (see TestMain).
const crashChildEnv = "LEASEHOLD_EMBEDDED_CRASH_CHILD"

// crashCompactEnv, when set too, makes the child also compact all the time,
// so kills land in the middle of compactions and their sweeps.
const crashCompactEnv = "LEASEHOLD_EMBEDDED_CRASH_COMPACT"

const (
	crashWriters   = 16
	crashKeyPrefix = "/registry/durability/"
	// crashChildLimit bounds a child the parent failed to kill.
	crashChildLimit = 60 * time.Second
)

// runCrashChild writes concurrently until killed and prints one line per
// acknowledged write, only after Update/Create returned: "ack <key> <rev>
// <value> ." (the trailing dot marks a complete line).
func runCrashChild() int {
	dir := os.Getenv(crashChildEnv)
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), crashChildLimit)
	defer cancel()
	var out sync.Mutex
	ack := func(key string, rev int64, value string) {
		out.Lock()
		defer out.Unlock()
		// One write call per line: a line is on the pipe whole or not at all.
		fmt.Fprintf(os.Stdout, "ack %s %d %s .\n", key, rev, value)
	}
	var wg sync.WaitGroup
	errs := make(chan error, crashWriters+1)
	if os.Getenv(crashCompactEnv) != "" {
		wg.Go(func() {
			if err := crashCompactor(ctx, s); err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}
	for w := range crashWriters {
		wg.Go(func() {
			if err := crashWriter(ctx, s, w, ack); err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	code := 0
	for err := range errs {
		fmt.Fprintln(os.Stderr, "writer:", err)
		code = 1
	}
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		code = 1
	}
	return code
}

// crashWriter updates its own key over and over and now and then creates a
// new one, so the log holds both kinds of write.
func crashWriter(ctx context.Context, s *Store, w int, ack func(string, int64, string)) error {
	base := fmt.Sprintf("%sw%02d-%d", crashKeyPrefix, w, time.Now().UnixNano())
	for gen := 0; ctx.Err() == nil; gen++ {
		key := fmt.Sprintf("%s-%d", base, gen)
		value := key + "#0"
		rev, err := s.Create(ctx, key, []byte(value))
		if err != nil {
			return err
		}
		ack(key, rev, value)
		for i := 1; i < 20 && ctx.Err() == nil; i++ {
			value = fmt.Sprintf("%s#%d", key, i)
			if rev, err = s.Update(ctx, key, rev, []byte(value)); err != nil {
				return err
			}
			ack(key, rev, value)
		}
	}
	return nil
}

// crashCompactor compacts every few milliseconds, keeping the newest 64
// revisions, until ctx ends.
func crashCompactor(ctx context.Context, s *Store) error {
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if rev := s.rev.Load() - 64; rev > 0 {
			if err := s.Compact(ctx, rev); err != nil {
				return fmt.Errorf("compact at %d: %w", rev, err)
			}
		}
	}
}

type ackedWrite struct {
	key   string
	rev   int64
	value string
}

// TestDurabilityKill9 kills a writing child with SIGKILL three times in the
// same directory and checks after each crash that every write the child saw
// acknowledged is in the reopened store, that the revision sequence has no
// gap, and that revisions continue after the newest durable one.
func TestDurabilityKill9(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		acks := crashChildRound(t, dir, 300+400*round, false)
		verifyAfterCrash(t, dir, acks)
	}
}

// TestDurabilityKill9WhileCompacting is TestDurabilityKill9 with a child
// that compacts all the time: besides the acknowledged writes, the history
// after the compacted revision must read back whole, with every event's
// previous value, which needs the records compaction keeps.
func TestDurabilityKill9WhileCompacting(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		acks := crashChildRound(t, dir, 1000+400*round, true)
		verifyAfterCrash(t, dir, acks)
	}
}

// crashChildRound starts the child, kills it once it has acknowledged at
// least minAcks writes, and returns every complete ack line it printed.
func crashChildRound(t *testing.T, dir string, minAcks int, compacting bool) []ackedWrite {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	if compacting {
		cmd.Env = append(cmd.Env, crashCompactEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	killed := false
	timer := time.AfterFunc(crashChildLimit, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()

	var acks []ackedWrite
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "ack" || f[4] != "." {
			continue // the line the kill cut short
		}
		rev, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("child printed a bad revision: %q", sc.Text())
		}
		acks = append(acks, ackedWrite{key: f[1], rev: rev, value: f[3]})
		if !killed && len(acks) >= minAcks {
			// SIGKILL: no deferred Close, no flush, exactly like a crash.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if !killed {
		t.Fatalf("child exited after only %d acks: %v", len(acks), werr)
	}
	return acks
}

func verifyAfterCrash(t *testing.T, dir string, acks []ackedWrite) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	head, _ := s.CurrentRevision(ctx)
	compacted, _ := s.CompactedRevision(ctx)

	// The state at the compacted revision, then the whole history after it,
	// which must be exactly revisions compacted+1..head, each event carrying
	// the value its key had before it.
	current := make(map[string]string)
	if compacted > 0 { // revision 0 would list the newest state
		start, err := s.List(ctx, crashKeyPrefix, storage.ListOptions{Revision: compacted})
		if err != nil {
			t.Fatalf("list at the compacted revision %d: %v", compacted, err)
		}
		for _, kv := range start.KVs {
			current[kv.Key] = string(kv.Value)
		}
	}
	history := make(map[int64]storage.Event, head-compacted)
	ch, err := storagetest.WatchEvents(ctx, t, s, crashKeyPrefix, compacted)
	if err != nil {
		t.Fatalf("watch history: %v", err)
	}
	for want := compacted + 1; want <= head; want++ {
		ev, ok := <-ch
		if !ok {
			t.Fatalf("history ends at %d, store at %d", want-1, head)
		}
		if ev.Revision != want {
			t.Fatalf("history jumps from %d to %d", want-1, ev.Revision)
		}
		prev, existed := current[ev.Key]
		if existed != (ev.PrevValue != nil) || string(ev.PrevValue) != prev {
			t.Fatalf("revision %d of %s: previous value %q, want %q (existed: %v)", ev.Revision, ev.Key, ev.PrevValue, prev, existed)
		}
		current[ev.Key] = string(ev.Value)
		history[ev.Revision] = ev
	}

	newest := make(map[string]int64)
	acked := make(map[int64]ackedWrite, len(acks))
	for _, a := range acks {
		acked[a.rev] = a
		newest[a.key] = max(newest[a.key], a.rev)
		if a.rev <= compacted {
			continue
		}
		ev, ok := history[a.rev]
		if !ok {
			t.Fatalf("acknowledged write %s@%d lost (store at %d)", a.key, a.rev, head)
		}
		if ev.Key != a.key || string(ev.Value) != a.value {
			t.Fatalf("revision %d holds %s=%q, acknowledged %s=%q", a.rev, ev.Key, ev.Value, a.key, a.value)
		}
	}
	for key, rev := range newest {
		kv, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("get %s acknowledged at %d: %v", key, rev, err)
		}
		if kv.ModRevision < rev || string(kv.Value) != current[key] {
			t.Fatalf("%s is %q@%d, acknowledged up to %d, history says %q", key, kv.Value, kv.ModRevision, rev, current[key])
		}
		if a, ok := acked[kv.ModRevision]; ok && (a.key != key || a.value != string(kv.Value)) {
			t.Fatalf("%s is %q@%d, acknowledged %s=%q there", key, kv.Value, kv.ModRevision, a.key, a.value)
		}
	}

	// Revisions continue from the newest durable write.
	rev, err := s.Create(ctx, crashKeyPrefix+"after-crash-"+strconv.FormatInt(head, 10), []byte("x"))
	if err != nil {
		t.Fatalf("write after reopen: %v", err)
	}
	if rev != head+1 {
		t.Fatalf("first write after reopen got revision %d, want %d", rev, head+1)
	}
	t.Logf("crash round: %d acks checked, %d revisions durable, compacted at %d", len(acks), head+1, compacted)
}
