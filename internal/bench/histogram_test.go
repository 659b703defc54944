package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndInvertible(t *testing.T) {
	prevMid := uint64(0)
	for i := range histBuckets {
		mid := bucketMid(i)
		if got := bucketOf(mid); got != i {
			t.Fatalf("bucketOf(bucketMid(%d)=%d) = %d", i, mid, got)
		}
		if i > 0 && mid <= prevMid {
			t.Fatalf("bucket %d midpoint %d not above bucket %d's %d", i, mid, i-1, prevMid)
		}
		prevMid = mid
	}
	for _, v := range []uint64{0, 1, 255, 256, 257, 511, 512, 1 << 40, math.MaxInt64, math.MaxUint64} {
		if idx := bucketOf(v); idx < 0 || idx >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d out of range", v, idx)
		}
	}
}

func TestBucketResolutionWithinHalfPercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := uint64(rng.Int64N(int64(time.Hour)))
		mid := bucketMid(bucketOf(v))
		if rel := math.Abs(float64(mid)-float64(v)) / float64(v); v > 0 && rel > 0.005 {
			t.Fatalf("value %d reported as %d: %.3f%% off", v, mid, rel*100)
		}
	}
}

// exactQuantile is the nearest-rank quantile of sorted samples.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

func TestQuantilesMatchSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := NewHistogram()
	var samples []time.Duration
	for range 200000 {
		// Log-normal around 2 ms with a long tail, like request latencies.
		d := time.Duration(math.Exp(rng.NormFloat64()*0.8) * float64(2*time.Millisecond))
		samples = append(samples, d)
		h.Record(d)
	}
	slices.Sort(samples)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		want, got := exactQuantile(samples, q), h.Quantile(q)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.01 {
			t.Errorf("q%.3f = %v, exact %v (%.2f%% off)", q, got, want, rel*100)
		}
	}
	if h.Quantile(1) != samples[len(samples)-1] || h.Max() != samples[len(samples)-1] {
		t.Errorf("max: Quantile(1)=%v Max=%v, want %v", h.Quantile(1), h.Max(), samples[len(samples)-1])
	}
	if h.Count() != uint64(len(samples)) {
		t.Errorf("count %d, want %d", h.Count(), len(samples))
	}
}

func TestSmallSamplesAreExact(t *testing.T) {
	h := NewHistogram()
	for _, d := range []time.Duration{5, 1, 3, 2, 4} {
		h.Record(d)
	}
	for q, want := range map[float64]time.Duration{0.2: 1, 0.5: 3, 0.9: 5, 1: 5} {
		if got := h.Quantile(q); got != want {
			t.Errorf("q%v = %v, want %v", q, got, want)
		}
	}
	if h.Mean() != 3 {
		t.Errorf("mean %v, want 3", h.Mean())
	}
}

func TestMergeEqualsRecordingEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	for i := range 10000 {
		d := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	a.Merge(NewHistogram())
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%v: merged %v, direct %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Max() != all.Max() || a.Mean() != all.Mean() {
		t.Errorf("merged count/max/mean %d/%v/%v, direct %d/%v/%v", a.Count(), a.Max(), a.Mean(), all.Count(), all.Max(), all.Mean())
	}
}

func TestEmptyAndReset(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram reports non-zero values")
	}
	h.Record(time.Second)
	h.Record(-time.Second)
	if h.Quantile(0.5) != 0 {
		t.Errorf("a negative duration should count as zero, p50 = %v", h.Quantile(0.5))
	}
	h.Reset()
	h.Record(7 * time.Millisecond)
	if h.Count() != 1 || h.Quantile(0.5) != 7*time.Millisecond || h.Max() != 7*time.Millisecond {
		t.Errorf("after reset: count %d p50 %v max %v", h.Count(), h.Quantile(0.5), h.Max())
	}
}
