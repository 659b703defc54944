package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// reconcile checks every writer's leases against the restarted server and
// then makes the stored state the writers' base for the next round:
//   - an acknowledged create exists;
//   - the stored resourceVersion is at least the acknowledged one; equal
//     means the acknowledged content, greater means the one write that was
//     in flight when the server died (nothing else could have written it);
//   - a lease never acknowledged is absent or holds its in-flight create.
//
// It returns how many leases hold an in-flight (unacknowledged) write.
func reconcile(ctx context.Context, t *testing.T, c *leaseClients, writers []*leaseWriter) (landed int) {
	t.Helper()
	for _, w := range writers {
		leases := c.pick(w.id).CoordinationV1().Leases(durabilityNamespace)
		for _, l := range w.leases {
			got, err := leases.Get(ctx, l.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				if l.hasAck {
					t.Errorf("%s: acknowledged write %s (rv %d) lost: the lease is gone", l.name, l.acked, l.ackedRV)
				}
				l.obj, l.hasPending = nil, false
				continue
			case err != nil:
				t.Fatalf("get %s after restart: %v", l.name, err)
			}
			rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
			if err != nil {
				t.Fatalf("%s: resourceVersion %q: %v", l.name, got.ResourceVersion, err)
			}
			v := valueOf(got)
			switch {
			case l.hasAck && rv < l.ackedRV:
				t.Errorf("%s: stored rv %d (%s) is older than the acknowledged rv %d (%s)", l.name, rv, v, l.ackedRV, l.acked)
			case l.hasAck && rv == l.ackedRV && !v.equal(l.acked):
				t.Errorf("%s: rv %d holds %s, but the acknowledged write at that rv was %s", l.name, rv, v, l.acked)
			case (!l.hasAck || rv > l.ackedRV) && !(l.hasPending && v.equal(l.pending)):
				t.Errorf("%s: rv %d holds %s, which is neither the acknowledged write (%v %s) nor the one in flight (%v %s)",
					l.name, rv, v, l.hasAck, l.acked, l.hasPending, l.pending)
			case !l.hasAck || rv > l.ackedRV:
				landed++
			}
			l.hasAck, l.acked, l.ackedRV, l.hasPending, l.obj = true, v, rv, false, got
		}
	}
	return landed
}

// checkLists lists the leases over JSON, protobuf and in pages, and checks
// that every list decodes and agrees with the reconciled ledgers. It
// returns the list's resourceVersion.
func checkLists(ctx context.Context, t *testing.T, c *leaseClients, writers []*leaseWriter) int64 {
	t.Helper()
	want := map[string]*leaseLedger{}
	for _, w := range writers {
		for _, l := range w.leases {
			if l.obj != nil {
				want[l.name] = l
			}
		}
	}
	var listRV int64
	for _, mode := range []struct {
		name  string
		cs    kubernetes.Interface
		limit int64
	}{{"json", c.json, 0}, {"protobuf", c.proto, 0}, {"json paged", c.json, 7}, {"protobuf paged", c.proto, 5}} {
		items, rv, err := listAll(ctx, mode.cs, mode.limit)
		if err != nil {
			t.Errorf("%s list after restart: %v", mode.name, err)
			continue
		}
		listRV = max(listRV, rv)
		seen := map[string]bool{}
		for i := range items {
			l := &items[i]
			if !strings.HasPrefix(l.Name, "dur-") {
				continue
			}
			seen[l.Name] = true
			led, ok := want[l.Name]
			switch {
			case !ok:
				t.Errorf("%s list has %s, which a GET does not find", mode.name, l.Name)
			case l.ResourceVersion != led.obj.ResourceVersion || !valueOf(l).equal(led.acked):
				t.Errorf("%s list has %s at rv %s (%s), GET has rv %s (%s)",
					mode.name, l.Name, l.ResourceVersion, valueOf(l), led.obj.ResourceVersion, led.acked)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s list has %d of the %d leases", mode.name, len(seen), len(want))
		}
	}
	return listRV
}

// listAll lists every lease, following continue tokens when limit > 0.
func listAll(ctx context.Context, cs kubernetes.Interface, limit int64) ([]coordinationv1.Lease, int64, error) {
	leases := cs.CoordinationV1().Leases(durabilityNamespace)
	var items []coordinationv1.Lease
	opts := metav1.ListOptions{Limit: limit}
	var firstRV string
	for page := 0; ; page++ {
		if page > 1000 {
			return nil, 0, errors.New("more than 1000 pages")
		}
		list, err := leases.List(ctx, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("page %d: %w", page, err)
		}
		if firstRV == "" {
			firstRV = list.ResourceVersion
		} else if list.ResourceVersion != firstRV {
			return nil, 0, fmt.Errorf("page %d has resourceVersion %s, the first page %s: pages must share a snapshot", page, list.ResourceVersion, firstRV)
		}
		items = append(items, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	rv, err := strconv.ParseInt(firstRV, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("list resourceVersion %q: %w", firstRV, err)
	}
	return items, rv, nil
}

// checkWatchReplay watches from a resourceVersion of before the crash. The
// server may still have that history (then every acknowledged write after it
// must be replayed, in order) or not (then the only event is a clean 410
// Expired error, as after an etcd compaction).
func checkWatchReplay(ctx context.Context, t *testing.T, cs kubernetes.Interface, fromRV int64, writers []*leaseWriter) (replayed bool) {
	t.Helper()
	expect := map[ackedWrite]bool{}
	var last int64
	for _, w := range writers {
		for _, a := range w.round {
			if a.rv > fromRV {
				expect[a] = true
				last = max(last, a.rv)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	wi, err := cs.CoordinationV1().Leases(durabilityNamespace).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(fromRV, 10)})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return false
		}
		t.Errorf("watch from rv %d after restart: %v", fromRV, err)
		return false
	}
	defer wi.Stop()
	prev := fromRV
	for len(expect) > 0 {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok {
				t.Errorf("watch from rv %d closed with %d acknowledged writes not replayed", fromRV, len(expect))
				return true
			}
			if ev.Type == watch.Error {
				st := apierrors.FromObject(ev.Object)
				if prev != fromRV || !apierrors.IsResourceExpired(st) {
					t.Errorf("watch from rv %d after %d events: error event %v, want only a first 410 Expired", fromRV, prev, st)
				}
				return false
			}
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				t.Errorf("watch event %s carries %T", ev.Type, ev.Object)
				return true
			}
			rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
			if err != nil || rv <= prev {
				t.Errorf("watch event %s %s has rv %q after rv %d (%v)", ev.Type, l.Name, l.ResourceVersion, prev, err)
				return true
			}
			prev = rv
			delete(expect, ackedWrite{name: l.Name, rv: rv})
			if rv >= last && len(expect) > 0 {
				t.Errorf("watch from rv %d reached rv %d without replaying %d acknowledged writes, e.g. %v", fromRV, rv, len(expect), anyKey(expect))
				return true
			}
		case <-ctx.Done():
			t.Errorf("watch from rv %d: %d acknowledged writes not replayed within the deadline", fromRV, len(expect))
			return true
		}
	}
	return true
}

func anyKey(m map[ackedWrite]bool) ackedWrite {
	for k := range m {
		return k
	}
	return ackedWrite{}
}

// errorLines returns the server log lines logged at level ERROR.
func errorLines(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	return out
}
