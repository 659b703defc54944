package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The targets at 100,000 nodes renewing every 10 s.
const (
	interactiveTarget = 2 * time.Second
	tabMemoryTarget   = 300 << 20
	latencyTarget     = time.Second
)

// probeLease is renewed by the fleet run itself, at known times, to time
// renewals to the screen. It sorts after bench's node-NNNNNN leases, so it
// is the heat map's last cell. Its 6 s duration with a renewal every 8-8.5 s
// makes it expired before each renewal and healthy for 2.25 s after it.
const (
	probeLease    = "zzzz-latency-probe"
	probeDuration = 6
	probeEvery    = 8 * time.Second
)

// longTasksJS runs in the page before its own script: it keeps the
// longest and the total time the page's main thread was blocked by tasks
// over 50 ms.
const longTasksJS = `window.__long = { n: 0, total: 0, max: 0 };
new PerformanceObserver((l) => { for (const e of l.getEntries()) { const w = window.__long; w.n++; w.total += e.duration; w.max = Math.max(w.max, e.duration); } })
  .observe({ type: "longtask", buffered: true });`

// probeJS watches the heat map's last cell on every animation frame and
// notes the wall-clock time (ms) whenever it turns healthy.
const probeJS = `(() => {
  const p = window.__probe = { hits: [], frames: 0 };
  let was = "";
  const state = ` + cellStateFn + `;
  const look = () => {
    const n = window.dash.state.codes.length;
    const s = n ? state(n - 1) : "none";
    if (s === "healthy" && was !== "healthy" && was !== "") p.hits.push(Date.now());
    was = s;
    p.frames++;
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
  return true;
})()`

// TestDashboardFleet is the large-fleet run, not part of the default test
// run: LEASEHOLD_DASHBOARD_FLEET=N starts `leasehold bench rate` with N
// registered nodes renewing every 10 s, waits until the dashboard lists
// them (healthy or not: a loaded machine may renew fewer), then opens a fresh page and measures what the issue sets targets
// for: the time from navigation to the page showing counts, heat map and
// rows (target 2 s), the tab's renderer memory (300 MB), and renewals to
// the screen (1 s): the test renews probeLease at known times and the page
// notes when the probe's cell is drawn healthy again. It also reports the
// dashboard process's CPU and memory. LEASEHOLD_DASHBOARD_PROBES sets the
// number of timed renewals (20); LEASEHOLD_DASHBOARD_SCREENSHOT=FILE
// saves a screenshot (docs/dashboard.png is taken at 10,000 nodes).
//
//	LEASEHOLD_DASHBOARD_FLEET=100000 go test ./test/dashboard -run Fleet -v -timeout 60m
func TestDashboardFleet(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LEASEHOLD_DASHBOARD_FLEET"))
	if n <= 0 {
		t.Skip("set LEASEHOLD_DASHBOARD_FLEET=N to run the dashboard against N renewing nodes")
	}
	probes := 20
	if v, err := strconv.Atoi(os.Getenv("LEASEHOLD_DASHBOARD_PROBES")); err == nil && v > 0 {
		probes = v
	}
	ctx := browser(t, 1400, 1000)
	browserPID := chromedp.FromContext(ctx).Browser.Process().Pid
	// The default grace: bench renews every 10 s, past the short one.
	srv := startServer(t, "--node-monitor-grace-period", "50s")
	start(t, "bench", "bench", "rate", "--kubeconfig", srv.Kubeconfig, "--nodes", strconv.Itoa(n), "--register-nodes",
		"--interval", "10s", "--duration", "60m", "--client", "lean")
	dash, url := startDashboard(t, srv.Kubeconfig)
	dashPID := dash.Pid()

	// Wait until the dashboard lists the whole fleet, reading its stream
	// rather than a page: the tab measured below is the browser's only
	// one. A loaded machine may not renew every lease in time; the counts
	// say how many are healthy, and the page is measured either way.
	began := time.Now()
	c := waitListed(t, url, n, 30*time.Minute)
	t.Logf("%d node leases listed on the dashboard %v after the server started: %+v", n, time.Since(began).Round(time.Second), c)

	probe := newProbe(t, srv.Kubeconfig)

	// A fresh page on the full fleet.
	tab := ctx
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: longTasksJS}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	painted := waitFor(t, tab, "first paint", "window.dash.interactiveAt", func(s string) bool { return s != "0" })
	rowsAt := waitFor(t, tab, "first rows", "window.dash.rowsAt", func(s string) bool { return s != "0" })
	p, _ := strconv.ParseFloat(painted, 64)
	r, _ := strconv.ParseFloat(rowsAt, 64)
	interactive := time.Duration(max(p, r) * float64(time.Millisecond))
	t.Logf("%d nodes: counts and heat map drawn %.0f ms, rows %.0f ms after navigation start", n, p, r)
	if interactive > interactiveTarget {
		t.Errorf("page complete %v after navigation, target %v", interactive, interactiveTarget)
	}
	if _, err := evalString(tab, probeJS); err != nil {
		t.Fatal(err)
	}

	// Renew the probe at known times, sampling the tab's and the
	// dashboard's resources meanwhile.
	cpu0, _ := readStat(dashPID)
	rcpu0 := renderersCPU(browserPID)
	updates0 := probe.leaseUpdates(t)
	window := time.Now()
	var renewals []time.Time
	var watched []time.Duration // renewal to the test's own watch event
	var peakTab procMem         // the sum of all renderers
	for range probes {
		time.Sleep(probeEvery + rand.N(500*time.Millisecond))
		at, seen := probe.renew(t)
		renewals = append(renewals, at)
		if seen > 0 {
			watched = append(watched, seen)
		}
		var sum procMem
		for _, pid := range renderers(browserPID) {
			if m, err := memOf(pid); err == nil {
				sum.rss += m.rss
				sum.pss += m.pss
			}
		}
		peakTab.rss, peakTab.pss = max(peakTab.rss, sum.rss), max(peakTab.pss, sum.pss)
	}
	time.Sleep(3 * time.Second) // the last renewal's way to the screen
	cpu1, _ := readStat(dashPID)
	rcpu1 := renderersCPU(browserPID)
	elapsed := time.Since(window)
	// What the fleet achieved meanwhile: on a loaded machine bench may
	// renew fewer than N every 10 s.
	rate := float64(probe.leaseUpdates(t)-updates0) / elapsed.Seconds()
	final, _ := evalString(tab, "JSON.stringify(window.dash.state.lastSummary.counts)")
	t.Logf("server: %.0f lease updates/s while renewals were timed (the target fleet is %d/s); the page's counts at the end: %s", rate, n/10, final)

	// Renewal to screen: the first time the cell turned healthy after
	// each renewal (within the 2.25 s it stays healthy).
	raw, err := evalString(tab, "JSON.stringify(window.__probe)")
	if err != nil {
		t.Fatal(err)
	}
	var seen struct {
		Hits   []int64 `json:"hits"`
		Frames int     `json:"frames"`
	}
	if err := json.Unmarshal([]byte(raw), &seen); err != nil {
		t.Fatalf("probe record %q: %v", raw, err)
	}
	var lat []time.Duration
	for _, at := range renewals {
		ms := at.UnixMilli()
		if i := slices.IndexFunc(seen.Hits, func(h int64) bool { return h >= ms && h < ms+2250 }); i >= 0 {
			lat = append(lat, time.Duration(seen.Hits[i]-ms)*time.Millisecond)
		}
	}
	slices.Sort(lat)
	t.Logf("renewal to screen over %d renewals (%d seen, %d animation frames): min %v, median %v, p90 %v, max %v; all %v",
		len(renewals), len(lat), seen.Frames, percentile(lat, 0), percentile(lat, 50), percentile(lat, 90), percentile(lat, 100), lat)
	slices.Sort(watched)
	t.Logf("renewal to a watch event in this test (the server's share): %d seen, median %v, p90 %v, max %v",
		len(watched), percentile(watched, 50), percentile(watched, 90), percentile(watched, 100))
	if len(lat) < len(renewals) {
		t.Errorf("%d of %d renewals never turned the probe's cell healthy on screen within 2.25 s", len(renewals)-len(lat), len(renewals))
	}
	if m := percentile(lat, 100); m > latencyTarget {
		t.Errorf("slowest renewal to screen %v, target %v", m, latencyTarget)
	}

	// The tab's memory: its renderer is the largest of the browser's
	// renderer processes (the others are Chromium's spare renderer and the
	// start page's), and all of them together bound it from above.
	var rs []string
	var page procMem
	for _, pid := range renderers(browserPID) {
		if m, err := memOf(pid); err == nil {
			rs = append(rs, fmt.Sprintf("pid %d RSS %s PSS %s", pid, mib(m.rss), mib(m.pss)))
			if m.rss > page.rss {
				page = m
			}
		}
	}
	heap, _ := evalString(tab, "performance.memory ? performance.memory.usedJSHeapSize : 'n/a'")
	long, _ := evalString(tab, "JSON.stringify(window.__long)")
	draws, _ := evalString(tab, "JSON.stringify({paints: window.dash.paints, drawMs: Math.round(window.dash.drawMs), drawMaxMs: Math.round(window.dash.drawMaxMs)})")
	deltas, _ := evalString(tab, "window.dash.deltas")
	t.Logf("tab: renderer RSS %s PSS %s, JS heap %s bytes; all renderers [%s], the peak of their sum while renewing RSS %s PSS %s; renderers' CPU %.2f cores; long tasks %s; heat map draws %s; %s heat deltas applied",
		mib(page.rss), mib(page.pss), heap, strings.Join(rs, "; "), mib(peakTab.rss), mib(peakTab.pss), float64(rcpu1-rcpu0)/float64(elapsed), long, draws, deltas)
	if page.rss > tabMemoryTarget {
		t.Errorf("tab's renderer RSS %s, target %s", mib(page.rss), mib(tabMemoryTarget))
	}
	dm, _ := memOf(dashPID)
	t.Logf("dashboard process: %.2f cores over %v (CPU %v), RSS %s, peak RSS %s",
		float64(cpu1.cpu-cpu0.cpu)/float64(elapsed), elapsed.Round(time.Second), cpu1.cpu-cpu0.cpu, mib(dm.rss), mib(peakRSS(dashPID)))

	if out := os.Getenv("LEASEHOLD_DASHBOARD_SCREENSHOT"); out != "" {
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", out)
	}
}

// counts are a summary's node lease counts.
type counts struct {
	Healthy int `json:"healthy"`
	Late    int `json:"late"`
	Expired int `json:"expired"`
}

// waitListed reads the dashboard's stream until a summary counts at least
// want node leases (bench's and the probe's), and returns its counts.
func waitListed(t *testing.T, url string, want int, timeout time.Duration) counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("dashboard stream: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	event, listed := "", 0
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event == "summary" {
			var s struct {
				NodeLeases int    `json:"nodeLeases"`
				Counts     counts `json:"counts"`
			}
			if err := json.Unmarshal([]byte(data), &s); err != nil {
				t.Fatalf("summary %q: %v", data, err)
			}
			if listed = s.NodeLeases; listed >= want {
				return s.Counts
			}
		}
	}
	t.Fatalf("%d node leases listed when the stream ended (%v), want %d", listed, sc.Err(), want)
	return counts{}
}

// probe renews probeLease through its own client.
type probe struct {
	cs     kubernetes.Interface
	leases interface {
		Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
	}
	lease *coordinationv1.Lease
	// watch sees the probe's renewals as any watcher does.
	watch watch.Interface
}

func newProbe(t *testing.T, kubeconfig string) *probe {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := metav1.NowMicro()
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: probeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(probeLease), LeaseDurationSeconds: ptr.To[int32](probeDuration),
			AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", probeLease, err)
	}
	w, err := leases.Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + probeLease, ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatalf("watching %s: %v", probeLease, err)
	}
	t.Cleanup(w.Stop)
	return &probe{cs: cs, leases: leases, lease: l, watch: w}
}

// renew sets the probe's renewTime to now and returns that time, and how
// long the renewal took to reach the probe's own watch (0: not within 5 s,
// or the watch ended).
func (p *probe) renew(t *testing.T) (time.Time, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := metav1.NowMicro()
	l := p.lease.DeepCopy()
	l.Spec.RenewTime = &now
	updated, err := p.leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("renewing %s: %v", probeLease, err)
	}
	p.lease = updated
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-p.watch.ResultChan():
			if !ok {
				return now.Time, 0
			}
			if l, isLease := ev.Object.(*coordinationv1.Lease); isLease && l.ResourceVersion == updated.ResourceVersion {
				return now.Time, time.Since(now.Time)
			}
		case <-timeout:
			return now.Time, 0
		}
	}
}

// leaseUpdates is the server's count of successful lease updates
// (apiserver_request_total).
func (p *probe) leaseUpdates(t *testing.T) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := p.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("server metrics: %v", err)
	}
	var sum float64
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `resource="leases"`) &&
			strings.Contains(line, `verb="update"`) && strings.Contains(line, `code="200"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}
