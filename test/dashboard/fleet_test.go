package dashboard_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardFleet is the large-fleet run, not part of the default test
// run: LEASEHOLD_DASHBOARD_FLEET=N starts `leasehold bench rate` with N
// registered nodes renewing every 10 s, opens the page once they are all
// listed, logs the time to the first full paint and the tab's JS heap,
// and writes a screenshot to docs/dashboard.png.
//
//	LEASEHOLD_DASHBOARD_FLEET=10000 go test ./test/dashboard -run Fleet -v -timeout 20m
func TestDashboardFleet(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LEASEHOLD_DASHBOARD_FLEET"))
	if n <= 0 {
		t.Skip("set LEASEHOLD_DASHBOARD_FLEET=N to run the dashboard against N renewing nodes")
	}
	ctx := browser(t, 1400, 1000)
	// The default grace: bench renews every 10 s, past the short one.
	srv := startServer(t, "--node-monitor-grace-period", "50s")
	start(t, "bench", "bench", "rate", "--kubeconfig", srv.kubeconfig, "--nodes", strconv.Itoa(n), "--register-nodes",
		"--interval", "10s", "--duration", "30m", "--client", "lean")
	_, url := startDashboard(t, srv.kubeconfig)
	// Wait until the dashboard process lists the whole fleet.
	tab := newTab(t, ctx)
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		s, _ := evalString(tab, text("#count-healthy"))
		if v, _ := strconv.Atoi(s); v >= n*99/100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %s healthy node leases after 10 minutes", s)
		}
		time.Sleep(time.Second)
	}
	// A fresh page on the full fleet: time to the first paint with data.
	page := newTab(t, ctx)
	opened := time.Now()
	if err := chromedp.Do(page, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	at := waitFor(t, page, "first paint", "window.dash.interactiveAt", func(s string) bool { return s != "0" })
	t.Logf("%d nodes: first paint with data %s ms after navigation start (%v wall, including navigation)", n, at, time.Since(opened).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	heap, _ := evalString(page, "performance.memory ? performance.memory.usedJSHeapSize : 'n/a'")
	t.Logf("JS heap used after 5 s: %s bytes", heap)
	png, err := chromedp.Run(page, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(filepath.Dir(file), "..", "..", "docs", "dashboard.png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}
