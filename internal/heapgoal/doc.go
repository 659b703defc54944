// Package heapgoal keeps a server's memory near a target instead of a
// multiple of its live data, without letting the collector run back to back
// when the live data itself outgrows the target.
//
// Why: Go's collector lets the heap grow to live×(1+GOGC/100) before its next
// cycle. serve runs at GOGC=200, which halves the collector's CPU at small
// heaps for memory nobody misses there. But the live heap grows with the
// fleet (about 3.5 KB per Node and its lease), and at 100,000 nodes two more
// live heaps of garbage were 700 MB: peak RSS 1.6 GiB where the live data
// needed 0.4 GB.
//
// A soft memory limit (GOMEMLIMIT, debug.SetMemoryLimit) is the runtime's own
// answer: the collector paces itself to stay under the limit, so the heap
// may grow by whatever the limit leaves above the live data (about 430 MB at
// 100,000 nodes, 240 MB at the peak of their registration) and not by a
// fixed amount sized for the worst moment. Measured on the same quiet
// machine, 100,000 nodes for 4 minutes: a fixed cap of 256 MiB above the
// live heap (this package's previous policy) cost 193 CPU-ms per 1,000
// renewals at 6,900 renewals/s and 850 MiB peak RSS; a 900 MiB limit cost
// 156 CPU-ms at 8,460/s and 970 MiB (GOGC=200 alone: 155 CPU-ms, 7,600/s,
// 1,541 MiB).
//
// A fixed limit alone fails the other way: once the live data nears it, the
// collector runs continuously (the runtime caps it at half the CPU and then
// lets memory exceed the limit). So the tuner raises the limit as the live
// heap grows: after every collection it sets
//
//	max(Options.MemoryLimit, overhead + live×(1+MinPercent/100))
//
// where overhead is the runtime's memory that is not heap (stacks, GC and
// span metadata), read from runtime/metrics. The heap may then always grow
// at least MinPercent of the live data before the next cycle, as with
// GOGC=MinPercent, and the limit binds only while it leaves more than that.
//
// Invariants:
//   - GOGC stays Options.Percent; the tuner only sets the memory limit, and
//     never below Options.MemoryLimit.
//   - It changes process-wide settings: one tuner per process, started by
//     the program's main, never by a library (tests run several servers in
//     one process).
//   - Run returns when its context ends; it starts no other goroutine.
package heapgoal
