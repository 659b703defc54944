package dashboard

import (
	"encoding/binary"
	"time"
)

// The heat map reaches the page as renewals, not as ages. A cell is two
// uint16s: when the lease was last renewed (a code, below) and its
// duration in seconds; the page computes each cell's age and colour from
// them and the summary's clock. Ages change on every tick for every cell,
// renewals only when a node renews, so after a keyframe a page receives
// only the cells whose code or duration changed since the previous tick
// (a delta): at 100,000 nodes renewing every 10 s about 5,000 cells of 5
// bytes per 500 ms tick (25 KB), where the map of ages was 100 KB.
const (
	// cellUnit is the resolution of a renewal code: 0.25% of a 40 s lease.
	cellUnit = 100 * time.Millisecond
	// cellModulus: code-1 is the renewal time in cellUnits modulo
	// cellModulus, so codes 1..cellModulus are renewals, and the page reads
	// an age unambiguously as long as it is under cellModulus units (6553 s).
	cellModulus = 65534
	// cellNever is a lease without a renewTime or a duration (grey).
	cellNever uint16 = 0
	// cellOld is a lease at least 2.5 durations old (HeatByte's cap), or
	// older than maxCellAge: the page draws it as the oldest colour.
	cellOld uint16 = 65535
	// maxCellAge keeps ages below the code's wrap-around; only a lease
	// longer than 40 minutes reaches it before 2.5 durations.
	maxCellAge = 6000 * time.Second
)

// encodeCell is a node lease's cell at now: its renewal code and duration.
// A renewTime in the future (a skewed holder clock) is drawn as renewed
// now, as HeatByte draws it fresh.
func encodeCell(renew time.Time, duration time.Duration, now time.Time) (code, dur uint16) {
	return beatOf(renew, duration).cell(now.UnixNano())
}

// cell is encodeCell at now (Unix ns).
func (b beat) cell(now int64) (code, dur uint16) {
	if b.dur <= 0 {
		return cellNever, 0
	}
	dur = uint16(min(b.dur/int64(time.Second), 65535))
	renew := min(b.renew, now)
	if age := now - renew; age >= min(b.dur*5/2, int64(maxCellAge)) {
		return cellOld, dur
	}
	ms := renew / int64(time.Millisecond)
	if renew%int64(time.Millisecond) < 0 { // floor, as time.Time.UnixMilli
		ms--
	}
	return uint16(ms/cellUnit.Milliseconds()%cellModulus) + 1, dur
}

// heatMap is one tick's cells, in the heat map's order; layout changes
// whenever that order does (a lease came or went), so that cells of two
// maps with the same layout are the same leases.
type heatMap struct {
	layout uint64
	codes  []uint16
	durs   []uint16
}

// Keyframe and delta encodings (little-endian), sent base64 in the
// stream's "heat" and "heatdelta" events:
//
//	keyframe: uint32 n, n × uint16 code, n × uint16 duration
//	delta:    repeated { uvarint gap, uint16 code, uint16 duration }
//
// where a delta entry's cell index is the previous entry's plus gap (the
// first entry's is gap-1).
func (h *heatMap) keyframe() []byte {
	n := len(h.codes)
	b := make([]byte, 4+4*n)
	binary.LittleEndian.PutUint32(b, uint32(n))
	for i, c := range h.codes {
		binary.LittleEndian.PutUint16(b[4+2*i:], c)
	}
	for i, d := range h.durs {
		binary.LittleEndian.PutUint16(b[4+2*n+2*i:], d)
	}
	return b
}

// delta encodes the cells of h that differ from prev, or returns ok false
// when they are not comparable (another layout) or a delta would not be
// smaller than half the keyframe, so the keyframe should be sent instead.
func (h *heatMap) delta(prev *heatMap) (b []byte, ok bool) {
	if prev == nil || prev.layout != h.layout || len(prev.codes) != len(h.codes) {
		return nil, false
	}
	limit := 2 * len(h.codes) // half of 4 bytes per cell
	last := -1
	for i := range h.codes {
		if h.codes[i] == prev.codes[i] && h.durs[i] == prev.durs[i] {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-last))
		b = binary.LittleEndian.AppendUint16(b, h.codes[i])
		b = binary.LittleEndian.AppendUint16(b, h.durs[i])
		last = i
		if len(b) > limit {
			return nil, false
		}
	}
	return b, true
}
