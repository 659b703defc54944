package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// roundSize sizes one round of traffic and faults.
type roundSize struct {
	Clients, Watchers int
	// Etcd: the data lives in a three-member Debian etcd cluster, served by
	// Replicas leasehold processes (clients and watchers spread over them).
	Etcd     bool
	Replicas int
	Traffic  time.Duration
	Faults   faultPlan
	// CheckTimeout bounds porcupine.
	CheckTimeout time.Duration
}

// smallRound is the run `go test ./...` makes: about ten faults, enough
// for the injector's deck to deal each of the six embedded kinds (three of
// them crashes at failpoints, the compaction one waiting up to two
// compactor checks, 5 s apart) at least once.
var smallRound = roundSize{
	Clients: 4, Watchers: 2, Traffic: 45 * time.Second,
	Faults:       faultPlan{MinGap: 1500 * time.Millisecond, MaxGap: 3 * time.Second, MaxPause: 4 * time.Second, MaxDown: 500 * time.Millisecond, MaxFull: 3 * time.Second},
	CheckTimeout: time.Minute,
}

// soakRound is one round of the long run; rounds repeat until its
// duration has passed.
var soakRound = roundSize{
	Clients: 4, Watchers: 3, Traffic: 2 * time.Minute,
	Faults:       faultPlan{MinGap: time.Second, MaxGap: 5 * time.Second, MaxPause: 6 * time.Second, MaxDown: time.Second, MaxFull: 5 * time.Second},
	CheckTimeout: 3 * time.Minute,
}

// seed is LEASEHOLD_ROBUSTNESS_SEED, else a fixed one; logged either way.
func seed(t *testing.T) int64 {
	t.Helper()
	s := int64(20261127)
	if v := os.Getenv("LEASEHOLD_ROBUSTNESS_SEED"); v != "" {
		var err error
		if s, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatalf("LEASEHOLD_ROBUSTNESS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay with LEASEHOLD_ROBUSTNESS_SEED=%d)", s, s)
	return s
}

// soakEtcdRound is soakRound in etcd mode.
var soakEtcdRound = roundSize{
	Clients: 4, Watchers: 3, Traffic: 2 * time.Minute, Etcd: true, Replicas: 2,
	Faults:       faultPlan{MinGap: time.Second, MaxGap: 5 * time.Second, MaxPause: 6 * time.Second, MaxDown: 2 * time.Second, MaxCut: 12 * time.Second},
	CheckTimeout: 3 * time.Minute,
}

// etcdRound is the small run in etcd mode: two replicas on three members,
// faults on both, on etcd and between them. It runs long enough for about
// nine faults, so that each of the seven kinds comes at least once (draw;
// one is a member silent for 25 s); a cut may outlast the replica's 5 s
// per-call deadline to etcd.
var etcdRound = roundSize{
	Clients: 4, Watchers: 2, Traffic: 75 * time.Second, Etcd: true, Replicas: 2,
	Faults:       faultPlan{MinGap: 1500 * time.Millisecond, MaxGap: 4 * time.Second, MaxPause: 4 * time.Second, MaxDown: time.Second, MaxCut: 7 * time.Second},
	CheckTimeout: time.Minute,
}

// TestRobustnessEtcd is TestRobustness with the data in etcd: two
// replicas, each killed, paused and cut off from etcd, and etcd members
// killed and frozen two at a time (quorum lost).
func TestRobustnessEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of traffic and faults; not in -short")
	}
	st := runRound(t, seed(t), etcdRound)
	t.Log(st)
}

// TestRobustness is the small run: one round of random traffic, watches
// and faults against one server, every check on its history.
func TestRobustness(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of traffic and faults; not in -short")
	}
	size := smallRound
	size.Faults.FailpointBinary = failpointLeasehold(t)
	st := runRound(t, seed(t), size)
	t.Log(st)
	for _, fp := range embeddedFailpoints {
		if st.Failpoints[fp.name] == 0 {
			t.Errorf("the server never crashed at failpoint %s (%s armed %d times): the run did not test it", fp.name, fp.kind, st.Faults[fp.kind])
		}
	}
}

// stats is what a round covered.
type stats struct {
	Ops     map[string]int // kind/result
	Streams int
	Events  int
	Gone    int
	Replays int
	Faults  map[string]int
	// Failpoints counts the crashes at each failpoint.
	Failpoints map[string]int
	Violations int
	Odd        int
}

func (s stats) String() string {
	var b strings.Builder
	total := 0
	for _, n := range s.Ops {
		total += n
	}
	fmt.Fprintf(&b, "%d operations (", total)
	keys := make([]string, 0, len(s.Ops))
	for k := range s.Ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, s.Ops[k])
	}
	fmt.Fprintf(&b, "); %d watch streams with %d events, %d answered 410 Gone, %d final replays; faults:", s.Streams, s.Events, s.Gone, s.Replays)
	for _, k := range []string{faultKill, faultPause, faultDisk, faultBeforeSync, faultAfterSync, faultCompaction, faultEtcdKill, faultEtcdQuorum, faultEtcdCut, faultEtcdBlackhole, faultEtcdMemberSilent} {
		fmt.Fprintf(&b, " %s %d,", k, s.Faults[k])
	}
	b.WriteString(" failpoints reached:")
	for _, fp := range embeddedFailpoints {
		fmt.Fprintf(&b, " %s %d,", fp.name, s.Failpoints[fp.name])
	}
	fmt.Fprintf(&b, " unexpected answers %d; violations %d", s.Odd, s.Violations)
	return b.String()
}

func (s *stats) add(o stats) {
	for k, n := range o.Ops {
		s.Ops[k] += n
	}
	for k, n := range o.Faults {
		s.Faults[k] += n
	}
	for k, n := range o.Failpoints {
		s.Failpoints[k] += n
	}
	s.Streams += o.Streams
	s.Events += o.Events
	s.Gone += o.Gone
	s.Replays += o.Replays
	s.Violations += o.Violations
	s.Odd += o.Odd
}

// newClient is a clientset with a connection of its own (client-go shares
// one transport between identical configurations) and the function that
// closes its connections.
func newClient(t *testing.T, srv *server) (kubernetes.Interface, func()) {
	t.Helper()
	cfg := srv.restConfig(t)
	cfg.Timeout = 4 * opTimeout // a backstop; every request has its own context
	cfg.Dial = (&net.Dialer{Timeout: opTimeout}).DialContext
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("transport: %v", err)
	}
	hc := &http.Client{Transport: rt, Timeout: cfg.Timeout}
	c, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return c, hc.CloseIdleConnections
}

// runRound starts a server, runs traffic, watchers and faults for
// size.Traffic, checks the history and reports what it covered.
func runRound(t *testing.T, seed int64, size roundSize) stats {
	dataDir := filepath.Join(t.TempDir(), "data")
	if size.Faults.MaxFull > 0 {
		// The size e2e's disk tests use: the store's 64 MiB reserve plus
		// pebble's preallocated WAL files leave room for a few writes.
		if mnt, ok := mountTmpfs(t, "192m"); ok {
			dataDir, size.Faults.FillDir = filepath.Join(mnt, "data"), mnt
		} else {
			size.Faults.MaxFull = 0
		}
	}
	args := []string{"--history-retention", "5s", "--watch-cache-window", "200", "--watch-bookmark-interval", "1s"}
	var srvs []*server
	var members []*etcdMember
	links := map[*server]*etcdLink{}
	if size.Etcd {
		members = startEtcd(t, 3)
		pki := filepath.Join(t.TempDir(), "pki")
		if out, err := exec.Command(leaseholdBinary, "credentials", "init", "--dir", pki).CombinedOutput(); err != nil {
			t.Fatalf("credentials init: %v\n%s", err, out)
		}
		for i := range max(size.Replicas, 1) {
			// Each replica reaches etcd through proxies of its own, which
			// the partition fault cuts.
			link := newEtcdLink(t, members, i)
			srvs = append(srvs, startServerIn(t, filepath.Join(t.TempDir(), "data"), append([]string{"--etcd-servers", link.endpoints(),
				"--hostname-override", fmt.Sprintf("replica-%d", i), "--ca-dir", pki}, args...)...))
			links[srvs[i]] = link.attach(t, srvs[i])
		}
	} else if bin := size.Faults.FailpointBinary; bin != "" {
		srvs = []*server{startFailpointServer(t, bin, dataDir, args...)}
	} else {
		srvs = []*server{startServerIn(t, dataDir, args...)}
	}
	srv := srvs[0]
	admin, closeAdmin := newClient(t, srv)
	defer closeAdmin()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace: %v", err)
	}

	h := newHistory()
	ws := &watches{}
	odd := &oddErrors{}
	inj := &injector{srvs: srvs, etcd: members, h: h, rng: rand.New(rand.NewSource(seed)), plan: size.Faults, counts: map[string]int{}, reached: map[string]int{}, links: links}
	runCtx, cancel := context.WithTimeout(ctx, size.Traffic)
	defer cancel()
	var wg sync.WaitGroup
	var closers []func()
	for i := range size.Clients {
		c, closeC := newClient(t, srvs[i%len(srvs)])
		closers = append(closers, closeC)
		cl := &client{id: i, c: c, rng: rand.New(rand.NewSource(seed + 1 + int64(i))), h: h, seen: map[string]metav1.ObjectMeta{}, odd: odd}
		wg.Add(1)
		go func() { defer wg.Done(); cl.run(runCtx) }()
	}
	for i := range size.Watchers {
		c, closeC := newClient(t, srvs[(i+1)%len(srvs)])
		closers = append(closers, closeC)
		w := &watcher{id: i, c: c, rng: rand.New(rand.NewSource(seed + 1000 + int64(i))), w: ws}
		wg.Add(1)
		go func() { defer wg.Done(); w.run(runCtx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); inj.run(runCtx) }()
	wg.Wait()
	for _, f := range closers {
		f()
	}
	if inj.err != nil {
		t.Fatalf("fault injection: %v", inj.err)
	}
	for _, c := range inj.crashes {
		t.Errorf("%s", c)
	}
	t.Logf("faults:\n  %s", strings.Join(inj.log, "\n  "))

	// Final reads, after the last fault: nothing acknowledged was lost.
	checker := size.Clients
	for _, k := range keys {
		finalRead(t, admin, h, checker, k)
	}
	// Final replays from retained resourceVersions, and from the oldest
	// recorded one: the same events again, or 410.
	streams := ws.snapshot()
	records := h.snapshot()
	var reach int64
	for _, s := range streams {
		reach = max(reach, s.covered())
	}
	for _, r := range records {
		reach = max(reach, r.Out.RV)
	}
	starts := replayStarts(streams, rand.New(rand.NewSource(seed+2000)))
	for _, rv := range starts {
		ws.add(watchFromReplay(ctx, admin, rv, reach))
	}
	streams = ws.snapshot()

	st := stats{Ops: map[string]int{}, Faults: inj.counts, Failpoints: inj.reached, Replays: len(starts), Odd: odd.n}
	for _, r := range records {
		st.Ops[r.In.Kind+"/"+r.Out.Result]++
	}
	for _, s := range streams {
		st.Streams++
		st.Events += len(s.Events)
		if s.Gone {
			st.Gone++
		}
	}
	if odd.n > 0 {
		t.Logf("%d answers the model has no place for (recorded as unknown), first: %s", odd.n, strings.Join(odd.first, "; "))
	}

	// The checks.
	model := leaseModel.ToModel()
	illegal, unchecked, lin := checkLinearizable(model, h.operations(), size.CheckTimeout)
	violations := checkWatches(streams, records)
	if len(illegal) > 0 {
		violations = append([]string{fmt.Sprintf("linearizability: not linearizable: %s (see linearizability-KEY.html)", strings.Join(illegal, ", "))}, violations...)
	}
	if len(unchecked) > 0 {
		violations = append([]string{fmt.Sprintf("linearizability: porcupine could not decide within %v: %s", size.CheckTimeout, strings.Join(unchecked, ", "))}, violations...)
	}
	st.Violations = len(violations)
	if len(violations) > 0 {
		dir := saveArtifacts(t, srvs, records, streams, model, lin, inj.log)
		t.Errorf("seed %d: %d violations; history, watches, porcupine's visualization and server logs in %s:\n  %s",
			seed, len(violations), dir, strings.Join(violations, "\n  "))
	}
	return st
}

// checkLinearizable checks each Lease name's history on its own (the
// model's partition) and returns the names that are not linearizable, the
// names porcupine could not decide in time, and, for each name that failed,
// porcupine's account of it for the visualization.
func checkLinearizable(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (illegal, unchecked []string, lin map[string]porcupine.LinearizationInfo) {
	lin = map[string]porcupine.LinearizationInfo{}
	for _, part := range model.Partition(ops) {
		key := part[0].Input.(input).Key
		res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
		switch res {
		case porcupine.Illegal:
			illegal = append(illegal, key+" ("+explain(model, part, info)+")")
			lin[key] = info
		case porcupine.Unknown:
			unchecked = append(unchecked, key)
		}
	}
	return illegal, unchecked, lin
}

// explain says where the longest linearization porcupine found stopped:
// the state it reached and the earliest operations it could not place.
func explain(model porcupine.Model, part []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var longest []porcupine.Operation
	for _, p := range info.PartialLinearizationsOperations() {
		for _, l := range p {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	st := model.Init()
	placed := map[int64]bool{} // by call time and client
	for _, op := range longest {
		_, st = model.Step(st, op.Input, op.Output)
		placed[op.Call*16+int64(op.ClientId)] = true
	}
	var next []string
	for _, op := range part {
		if len(next) == 3 {
			break
		}
		if !placed[op.Call*16+int64(op.ClientId)] {
			next = append(next, fmt.Sprintf("client %d at %.6fs-%.6fs: %s", op.ClientId, float64(op.Call)/1e9, float64(op.Return)/1e9, model.DescribeOperation(op.Input, op.Output)))
		}
	}
	return fmt.Sprintf("after %d of %d operations in state %s, none of these fits: %s", len(longest), len(part), model.DescribeState(st), strings.Join(next, "; "))
}

// finalRead reads key until it gets an answer (bounded) and records it.
func finalRead(t *testing.T, c kubernetes.Interface, h *history, client int, key string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		call := h.now()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		l, err := c.CoordinationV1().Leases(namespace).Get(ctx, key, metav1.GetOptions{})
		cancel()
		ret := h.now()
		switch {
		case err == nil:
			h.add(record{Client: client, In: input{Kind: opGet, Key: key}, Out: objectOutput(l), Call: call, Return: ret})
			return
		case apierrors.IsNotFound(err):
			h.add(record{Client: client, In: input{Kind: opGet, Key: key}, Out: output{Result: resNotFound}, Call: call, Return: ret})
			return
		case time.Now().After(deadline):
			t.Fatalf("final read of %s: %v", key, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// replayStarts picks the resourceVersions to replay from: the oldest start
// recorded and up to five others.
func replayStarts(streams []*stream, rng *rand.Rand) []int64 {
	var all []int64
	for _, s := range streams {
		all = append(all, s.StartRV)
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	starts := []int64{all[0]}
	for range 5 {
		starts = append(starts, all[rng.Intn(len(all))])
	}
	return starts
}

// watchFromReplay is watchFrom for a replay: it ends once it has covered
// reach (or is answered 410), and within 20 s.
func watchFromReplay(ctx context.Context, c kubernetes.Interface, rv, reach int64) *stream {
	return watchStream(ctx, c, &stream{Watcher: -1, StartRV: rv, Replay: true, ReachRV: reach}, 15)
}

// saveArtifacts writes what a person needs to read a violation into a
// directory that outlives the test, and returns it.
func saveArtifacts(t *testing.T, srvs []*server, records []record, streams []*stream, model porcupine.Model, lin map[string]porcupine.LinearizationInfo, faults []string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "leasehold-robustness-")
	if err != nil {
		t.Errorf("artifacts dir: %v", err)
		return "(none: " + err.Error() + ")"
	}
	write := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", " ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Errorf("writing %s: %v", name, err)
		}
	}
	write("history.json", records)
	write("watches.json", streams)
	write("faults.json", faults)
	for i, srv := range srvs {
		name := fmt.Sprintf("server-%d.log", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(srv.Logs()), 0o644); err != nil {
			t.Errorf("writing %s: %v", name, err)
		}
	}
	for key, info := range lin {
		if err := porcupine.VisualizePath(model, info, filepath.Join(dir, "linearizability-"+key+".html")); err != nil {
			t.Errorf("porcupine visualization of %s: %v", key, err)
		}
	}
	return dir
}
