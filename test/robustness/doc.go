// Package robustness proves Leasehold's guarantees the way etcd's robustness
// suite does: it records what real clients saw while faults were injected,
// and checks the whole record afterwards, instead of checking one scenario
// its author thought of.
//
// What it proves, against a real `leasehold serve` process (built from this
// repository) that it kills with SIGKILL and restarts, pauses with
// SIGSTOP/SIGCONT, whose disk (a 192 MiB tmpfs, where the test may mount
// one) it fills up and frees again, and that it crashes at chosen points
// inside the embedded store's commit path, at random moments:
//
//   - Linearizability. Several client-go clients do random Lease operations on
//     a few names: create, get, update (PUT) with a resourceVersion
//     precondition, a uid precondition, both or none, merge patch with and
//     without a resourceVersion precondition, delete with and without
//     preconditions, list. Every operation is recorded with its call and
//     return time and its result; a write whose answer was lost (connection
//     error, timeout, 5xx) is recorded as unknown, and may or may not have
//     happened; a 507 on a full disk must mean that nothing was written.
//     porcupine (the checker etcd uses) checks the history, partitioned by
//     Lease name, against a model of Kubernetes' Lease semantics
//     (model_test.go): the object present or absent with its value,
//     resourceVersion and uid; create-if-absent (409 AlreadyExists); a PUT
//     creates an absent Lease and needs a resourceVersion to update one (422
//     without); resourceVersion and uid preconditions (409 Conflict); 404 for
//     a patch or delete of an absent object; resourceVersions of one object
//     only grow. A read that misses an acknowledged write (one lost across a
//     restart) is a violation, and so is a server that exits by itself.
//   - Watches. Watchers watch the namespace from a resourceVersion, resume
//     from the last one they saw when a stream ends, and sometimes start
//     again from an older one. Each stream must deliver events in strictly
//     increasing resourceVersion order; every event seen at one
//     resourceVersion must be the same for every watcher; a stream must
//     contain every event any watcher saw, and every acknowledged write,
//     between its start and the last resourceVersion it was told about (no
//     gap, no duplicate); a resumed stream replays the same events;
//     bookmarks never go backwards nor behind an event; a resourceVersion
//     the server no longer keeps answers 410 Gone, never a silent gap. At
//     the end, watches from retained resourceVersions (and from the oldest
//     one recorded) must replay exactly what the watchers saw, or be 410.
//   - Fencing. Three `leasehold elect` processes run a writer (this test
//     binary in a helper mode) that sends its LEASEHOLD_FENCING_TOKEN with
//     every write to a resource served by the test, which refuses a token
//     smaller than the last it accepted. The leader's elector (alone, or
//     with its command) is paused with SIGSTOP for a varying time, often
//     past its lease; a new leader takes over; the old one is resumed. The
//     resource must have refused every write of a deposed leader made after
//     a newer token was accepted, and the accepted writes of two commands
//     never interleave. Then clock faults (up to twelve in the small run,
//     until two made a takeover): a follower's elector clock jumps
//     2.5 leases ahead, or runs eight times as fast, while the leader's
//     elector is stopped for 0.8 to 1.2 s, which alone never lets a
//     follower take over (client-go takes over only after seeing the
//     record unchanged for a lease, 2 s). The same properties must hold;
//     the run counts the skewed electors that took over early and the
//     stale writes refused after them, and fails if none took over (the
//     faults would have shown nothing).
//
// Crashes inside the commit path use go.etcd.io/gofail, as etcd does. The
// store marks three points with `// gofail: var NAME struct{}` comments,
// which the shipped binary compiles to nothing: beforeCommitSync (the
// batch is built, not yet in the write-ahead log), afterCommitSync (synced,
// neither published to watchers nor answered) and compactBeforeSweptMark
// (compaction has recorded its revision and deleted the records it frees,
// not yet its progress). The suite builds its own leasehold with them
// enabled (`go tool gofail enable` on a copy of internal/storage/embedded,
// compiled with `go build -overlay`, the checkout untouched), runs it with
// GOFAIL_HTTP, and arms one failpoint at a time with panic("NAME"): the
// process dies there, its stderr must name that failpoint (dying anywhere
// else is a crash, a violation), and it is restarted. The writes in flight
// are unknown, as after a kill, and every check above must hold: nothing
// acknowledged lost, a synced but unanswered write present after the
// restart and replayed to watchers, a compacted resourceVersion 410. The
// server runs with --history-retention 5s, so it compacts every 5 s. The
// injector deals the fault kinds from a shuffled deck, every kind once per
// pass, and the small run fails if any failpoint was never reached; each
// round's stats count the crashes at each failpoint.
//
// Clocks: Debian's faketime cannot skew Go programs (it interposes libc,
// and Go reads the clock through the vDSO; failpoint_test.go has the
// measurement), and client-go's leader elector takes no clock in its
// configuration. So the suite's build also replaces, in a copy of
// client-go's leaderelection.go (a replace directive in the build's own
// go.mod; the sources are prepared under the user's cache directory so
// that the compiler's cache holds across runs: the first build compiles
// client-go and everything above it again, 2.5 to 4.5 minutes here), the
// elector's clock.RealClock{} with one that two gofail failpoints skew per
// elector process: electorClockJump and electorClockRate.
//
// In etcd mode (TestRobustnessEtcd) the data lives in a three-member
// Debian etcd cluster (installed with apt-get when missing, else the test
// is skipped saying so) behind two leasehold replicas; clients and watchers
// spread over both, and the faults are kill -9 and SIGSTOP of a replica,
// kill -9 of an etcd member (the leader a third of the time), loss of
// quorum (two members frozen), a replica cut off from etcd while its
// clients still reach it, and the one member a replica uses going silent
// to it. An unknown write there is not bounded by a
// replica's death: its transaction may reach etcd afterwards.
//
// The cut (partition_test.go): each replica reaches the members only
// through TCP proxies of its own (proxy_test.go, its --etcd-servers). The
// fault cuts one replica's proxies for up to 7 s (12 s in the long run;
// the driver's per-call deadline is 5 s, the history retention 5 s) in
// one of two ways: every connection reset and every new one reset as
// soon as accepted, or blackholed, connections kept open (new ones
// accepted) with nothing forwarded either way until the link is
// restored, as a network partition does. Every check above must hold
// across it: the cut replica must answer consistent reads and writes
// with errors, never with stale data nor an acknowledgement of a write
// etcd did not take, and its watches must not skip what happened while
// it was away (410 rather than a gap). A probe client of the cut replica
// records what it answered (status codes, the longest request) and how
// long after the link came back it answered a consistent read and a
// write again, logged with the fault; a replica that has not within 30 s
// is a violation. A third kind (silent_test.go) makes only the member
// the replica's requests go to silent to it (its proxy blackholed) for
// 25 s while the other members stay reachable: the replica must get a
// read and a write answered through another member before the silence
// ends (the driver's fail-over takes its 10 s leader check plus a 5 s
// status timeout: 15.2 s measured), else it is a violation. Fault kinds
// are dealt from a shuffled deck, so a run of seven faults or more has
// each kind of its mode.
//
// A violation fails the test and leaves, in a directory named in the
// failure message, the history (history.json, watches.json, faults.json),
// porcupine's visualization of every key that failed
// (linearizability-KEY.html, open it in a browser) and the servers' logs.
//
// Two sizes. The small run (TestRobustness, TestRobustnessEtcd,
// TestFencing) is part of `go test ./...` and takes about four minutes
// (TestRobustness: 45 s of traffic, TestRobustnessEtcd 75 s; 219 s for the
// package in a full run on 2 cores; the failpoint build about 15 s in each
// of TestRobustness and TestFencing once the compiler's cache is warm). The
// long run is
//
//	LEASEHOLD_SOAK=30m go test ./test/robustness -run Soak -count=1 -v -timeout 2h
//
// which repeats traffic-and-faults rounds (each checked on its own, the
// embedded store and etcd in turn, or one store with
// LEASEHOLD_SOAK_STORE=embedded or etcd) and fencing rounds until the duration
// has passed, and logs what it covered: operations, histories, faults of
// each kind and violations.
//
// Replaying a failure: every run logs its seed ("seed N"). The seed decides
// every client's choice of operations and the fault schedule; run again
// with LEASEHOLD_ROBUSTNESS_SEED=N to replay the same operations and faults.
// The interleaving of real processes is not replayable, so a rare violation
// may need a few runs (-count=10) to show again; the directory it left is
// the record to read.
package robustness
