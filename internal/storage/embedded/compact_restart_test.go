package embedded

import (
	"context"
	"testing"
	"time"
)

// TestCompactionSurvivesRestarts restarts the store more often than the
// history it keeps (KeepFor), as a server restarted every minute with the
// default 5 minute retention: each run alone is too short to see any
// revision age past KeepFor, so only the persisted samples let it compact.
// The full-size version (restarts every minute for ten minutes of a real
// server) is BenchmarkCompactionRestarts.
func TestCompactionSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	policy := CompactionPolicy{Interval: 20 * time.Millisecond, KeepFor: 300 * time.Millisecond, KeepRevisions: 1}
	rev := compactAcrossRestarts(t, dir, policy, 8, 100*time.Millisecond)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	compacted, _ := s.CompactedRevision(context.Background())
	// Runs of 100 ms, 8 of them: the history older than 300 ms, about
	// the first five runs' writes, is compacted.
	if compacted < rev/4 {
		t.Fatalf("after 8 restarts, compacted at %d of %d", compacted, rev)
	}
	samples, err := loadSamples(s.db)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) > 20 {
		t.Errorf("%d revision samples kept; the policy needs a few", len(samples))
	}
}

// compactAcrossRestarts opens the store in dir runs times, each time
// updating one key for about runFor, and returns the newest revision.
func compactAcrossRestarts(tb testing.TB, dir string, policy CompactionPolicy, runs int, runFor time.Duration) int64 {
	tb.Helper()
	ctx := context.Background()
	var rev int64
	for range runs {
		s, err := Open(dir, Options{Compaction: policy})
		if err != nil {
			tb.Fatal(err)
		}
		if rev == 0 {
			if rev, err = s.Create(ctx, "/k", []byte("v")); err != nil {
				tb.Fatal(err)
			}
		}
		for end := time.Now().Add(runFor); time.Now().Before(end); {
			if rev, err = s.Update(ctx, "/k", rev, []byte("v")); err != nil {
				tb.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return rev
}

// BenchmarkCompactionRestarts is the full-size TestCompactionSurvivesRestarts:
// the server's default policy (compaction checked every minute, 5 minutes
// of history kept) with a restart every minute for ten minutes. Run it
// with -benchtime=1x; it reports the compacted share of the history.
func BenchmarkCompactionRestarts(b *testing.B) {
	policy := CompactionPolicy{Interval: time.Minute, KeepFor: 5 * time.Minute, KeepRevisions: 1000}
	for range b.N {
		dir := b.TempDir()
		rev := compactAcrossRestarts(b, dir, policy, 10, time.Minute)
		s, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		compacted, _ := s.CompactedRevision(context.Background())
		b.ReportMetric(float64(compacted)/float64(rev), "compacted/revisions")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCompactionTargetMaxRevisions(t *testing.T) {
	t0 := time.Now()
	p := CompactionPolicy{Interval: time.Second, KeepFor: time.Hour, KeepRevisions: 10, MaxRevisions: 100}
	target, _ := compactionTarget(p, t0, 1000, nil)
	if target != 900 {
		t.Fatalf("target with MaxRevisions 100 at revision 1000: %d, want 900", target)
	}
	p.MaxRevisions = 5
	if _, err := (Options{Compaction: p}).withDefaults(); err == nil {
		t.Fatal("MaxRevisions below KeepRevisions accepted")
	}
}
