// Package heapgoal bounds how far the Go heap may grow above its live data,
// so that a server's memory follows its fleet instead of a multiple of it.
//
// Why: Go's collector lets the heap grow to live×(1+GOGC/100) before its next
// cycle. serve runs at GOGC=200, which halves the collector's CPU at small
// heaps for memory nobody misses there. But the live heap grows with the
// fleet (about 3.5 KB per Node and its lease), and at 100,000 nodes two more
// live heaps of garbage were 700 MB: peak RSS 1.6 GiB where the live data
// needed 0.35 GB. A fixed GOMEMLIMIT fixes that only for the one fleet size
// it was chosen for, and an operator should not have to choose it.
//
// So the tuner keeps GOGC's proportional headroom while it is small and caps
// it at Options.MaxHeadroom bytes once the heap is large: after every
// collection it reads the live heap (runtime/metrics /gc/heap/live:bytes)
// and sets the GC percent for the next cycle to
//
//	min(Percent, max(MinPercent, MaxHeadroom×100/live))
//
// The heap then peaks near live+MaxHeadroom, and the collector runs more
// often only where memory was the cost: its CPU per cycle is the mark work
// of the live heap, so the price is paid in proportion to the fleet.
//
// Invariants:
//   - The tuner only lowers GOGC from Percent, never below MinPercent (a
//     floor that keeps a huge heap from collecting continuously, as a
//     too-small GOMEMLIMIT does).
//   - It changes the process's GC percent, a process-wide setting: one
//     tuner per process, started by the program's main, never by a library
//     (tests run several servers in one process).
//   - Run returns when its context ends; it starts no other goroutine.
package heapgoal
