package embedded

import (
	"runtime"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// background.go makes pebble's flushes and compactions yield the
// processor at every block they read or write, so that on a busy core
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
// queue as the requests' goroutines, so a yield per block (about 4 KiB,
// tens of microseconds of compression or merging) leaves it what the
// requests do not use, and all of an idle core.
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

// yieldingFile yields the processor before every read and write.
type yieldingFile struct{ vfs.File }

func (f yieldingFile) Write(p []byte) (int, error) {
	runtime.Gosched()
	return f.File.Write(p)
}

func (f yieldingFile) WriteAt(p []byte, off int64) (int, error) {
	runtime.Gosched()
	return f.File.WriteAt(p, off)
}

func (f yieldingFile) ReadAt(p []byte, off int64) (int, error) {
	runtime.Gosched()
	return f.File.ReadAt(p, off)
}

func (f yieldingFile) Read(p []byte) (int, error) {
	runtime.Gosched()
	return f.File.Read(p)
}
