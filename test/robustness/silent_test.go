package robustness

import (
	"fmt"
	"strings"
	"time"
)

// The silent-member fault (etcd mode): the one etcd member a replica's
// requests go to falls silent to that replica alone (its proxy blackholed:
// connections stay open, nothing is forwarded), while the other members
// and every other link stay up. gRPC does not leave a connection that
// merely stops answering; the driver's leader check does (internal/storage/
// etcd/failover.go), within its interval plus two status timeouts. The
// fault holds the silence for memberSilence and requires the replica's
// probe to get a read and a write answered while it lasts, by another
// member; otherwise it is a violation. Every other check holds as for any
// fault.
const faultEtcdMemberSilent = "the etcd member a replica uses silent to it, the others reachable"

// memberSilence is how long the member stays silent: longer than the
// driver's leader check interval (10 s) plus two status timeouts (5 s
// each), the longest its fail-over may take, with room for a busy
// machine.
const memberSilence = 25 * time.Second

// silence blackholes the proxy srv's requests go through for
// memberSilence, while the probe waits for the replica to answer through
// another member.
func (in *injector) silence(srv *server) (time.Duration, error) {
	l := in.links[srv]
	if l == nil {
		return 0, fmt.Errorf("%s: the server on %s has no etcd link", faultEtcdMemberSilent, srv.addr())
	}
	active := l.busiest(300 * time.Millisecond)
	at := in.h.now()
	pr := l.startProbe()
	cutAt := time.Now()
	active.cut(linkBlackholed)
	// A request answered after this was answered by another member: the
	// silent one delivers nothing until restored.
	answered := pr.finish(cutAt.Add(50*time.Millisecond), memberSilence)
	failedOver := time.Now()
	if rest := memberSilence - failedOver.Sub(cutAt); rest > 0 {
		time.Sleep(rest)
	}
	active.restore()
	report := pr.failOverReport(cutAt)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.log = append(in.log, fmt.Sprintf("%.3fs replica %d: %s (%s) for %v: %s", float64(at)/1e9, l.replica, faultEtcdMemberSilent, active.target, memberSilence, report))
	if !answered {
		in.crashes = append(in.crashes, fmt.Sprintf("replica %d (%s) answered no read and write through another member within %v of the member %s going silent to it at %.3fs: %s",
			l.replica, srv.addr(), memberSilence, active.target, float64(at)/1e9, report))
	}
	return memberSilence, nil
}

// busiest is the link's proxy that forwarded the most bytes toward etcd
// during window: the one the replica's single connection (pick-first)
// goes through.
func (l *etcdLink) busiest(window time.Duration) *proxy {
	before := make([]int64, len(l.proxies))
	for i, p := range l.proxies {
		before[i] = p.forwarded.Load()
	}
	time.Sleep(window)
	best, most := l.proxies[0], int64(-1)
	for i, p := range l.proxies {
		if n := p.forwarded.Load() - before[i]; n > most {
			best, most = p, n
		}
	}
	return best
}

// failOverReport says, for reads and for writes, how long after cutAt the
// first success returned and what the requests before it got.
func (pr *probe) failOverReport(cutAt time.Time) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var parts []string
	for _, write := range []bool{false, true} {
		counts := map[string]int{}
		back := "no answer from another member"
		for _, s := range pr.samples {
			if s.Write != write || s.Ret.Before(cutAt) {
				continue
			}
			if s.Answer == "200" {
				back = fmt.Sprintf("answered %v after the member went silent", s.Ret.Sub(cutAt).Round(time.Millisecond))
				break
			}
			counts[s.Answer]++
		}
		parts = append(parts, fmt.Sprintf("%s %s (before that: %s)", probeKind(write), back, countsString(counts)))
	}
	return strings.Join(parts, "; ")
}
