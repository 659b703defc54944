package embedded

import (
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// background.go makes pebble's flushes and compactions yield the
// processor every few blocks they read or write, so that on a busy core
// they run in the gaps between requests instead of taking most of it for
// as long as they last.
//
// Go gives a goroutine the processor until it blocks, yields, or has run
// 10 ms; a preempted goroutine waits in the global run queue, which each
// processor polls about every 61 goroutines it runs. A request's
// goroutines run some tens of microseconds each, so a compaction, which
// never blocks for long, got 10 ms in about every 12: on a server pinned to
// one core, serving 6,000 renewals/s with the core about 80% busy, an
// execution trace showed runnable goroutines rising from about 25 to
// 200-270 for 100-500 ms whenever pebble flushed or compacted (a
// compaction took 187 ms of CPU in one 550 ms window, a flush 29 ms in
// 150 ms), and the fleet's per-second p99 jumped from 2-3 ms to 50-150 ms
// every other second. A goroutine that yields waits its turn in the same
// queue as the requests' goroutines, so a yield every few blocks (see
// yieldEvery) bounds each of its turns to about half a millisecond: it
// gets all of an idle core, and a share of a busy one.
//
// Only the background work yields: files pebble creates for a memtable
// flush or a compaction (their write category says which), and table
// reads, which outside startup are mostly compactions' (the store reads
// current states from its index and the watch cache). The WAL, on every
// commit's path, never yields.

// yieldsOnWrite tells whether files created with category are background
// work's.
func yieldsOnWrite(category vfs.DiskWriteCategory) bool {
	return category == "pebble-compaction" || category == "pebble-memtable-flush"
}

// yieldsOnRead tells whether the file name is a table's.
func yieldsOnRead(name string) bool { return strings.HasSuffix(name, ".sst") }

// yieldEvery is how many reads or writes (of about 4 KiB each) background
// work does between yields: about half a millisecond of compression or
// merging. Measured with scripts/bench-rate.sh --register-nodes, PIN=1
// (the server alone on one core), 2026-11-29:
//   - 60,000 nodes, 2 min: p99 131-139 ms without yields, 84-86 ms with a
//     yield at every block, 62.3 ms with one every 16 (server CPU 149.5-
//     154.2, 144.3 and 117.1 ms per 1,000 renewals);
//   - 100,000 nodes, 5 min (saturated): 4,482 renewals/s and 13 memtable
//     write stalls with a yield at every block, against 5,706/s without
//     yields and 8,404/s, no stall, with one every 16. A yield at every
//     block left a compaction or flush only the idle processor and one
//     block per turn of the run queue, so flushes fell behind until the
//     memtable limit stopped writes.
const yieldEvery = 16

// yieldingFile yields the processor before every yieldEvery-th read or
// write. Reads of a table may come from several goroutines at once.
type yieldingFile struct {
	vfs.File
	ops atomic.Uint32
}

func (f *yieldingFile) yield() {
	if f.ops.Add(1)%yieldEvery == 0 {
		runtime.Gosched()
	}
}

func (f *yieldingFile) Write(p []byte) (int, error) {
	f.yield()
	return f.File.Write(p)
}

func (f *yieldingFile) WriteAt(p []byte, off int64) (int, error) {
	f.yield()
	return f.File.WriteAt(p, off)
}

func (f *yieldingFile) ReadAt(p []byte, off int64) (int, error) {
	f.yield()
	return f.File.ReadAt(p, off)
}

func (f *yieldingFile) Read(p []byte) (int, error) {
	f.yield()
	return f.File.Read(p)
}
