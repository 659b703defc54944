package bench

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear (the HDR idea): values below 256 ns have a
// bucket each, and every power-of-two range above that is split into
// histSub equal buckets. A bucket's width is at most 1/128 of its lower
// bound, so reporting its midpoint is within 0.4% of any value in it, which
// keeps percentiles well inside the 1% the reports promise while the whole
// table stays a fixed 58 KiB that merges by adding counts.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits // buckets per power of two
	// histBuckets covers every non-negative int64: the largest shift is
	// 63-histSubBits, and each shift adds one group of histSub buckets to the
	// first two (exact) groups.
	histBuckets = (64 - histSubBits + 1) * histSub
)

// Histogram counts durations. The zero value is not usable; use
// NewHistogram. It is not safe for concurrent use: Recorder serialises it.
type Histogram struct {
	counts []uint64
	total  uint64
	min    time.Duration
	max    time.Duration
	sum    time.Duration
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, histBuckets), min: math.MaxInt64}
}

// bucketOf maps a non-negative value to its bucket index.
func bucketOf(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - (histSubBits + 1)
	return (shift+1)*histSub + int(v>>uint(shift)) - histSub
}

// bucketMid is the value reported for a bucket: the exact value for the
// exact buckets, the midpoint otherwise.
func bucketMid(idx int) uint64 {
	if idx < 2*histSub {
		return uint64(idx)
	}
	shift := idx/histSub - 1
	low := uint64(idx%histSub+histSub) << uint(shift)
	return low + (uint64(1)<<uint(shift))/2
}

// Record adds one observation; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.total++
	h.sum += d
	if d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
}

// Merge adds every observation of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Reset empties the histogram, keeping its storage.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total, h.sum, h.max, h.min = 0, 0, 0, math.MaxInt64
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest observation, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average observation (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return h.sum / time.Duration(h.total)
}

// Quantile returns the value at quantile q (0 < q <= 1) using the
// nearest-rank definition: the smallest recorded value with at least q of all
// observations at or below it, to the histogram's resolution. It is clamped
// to the exact min and max, and the last rank is the exact maximum.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = max(1, min(rank, h.total))
	if rank == h.total {
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(bucketMid(i))
			return max(h.min, min(v, h.max))
		}
	}
	return h.max
}
