package dashboard_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestDashboardInBrowser opens the page on a server with three agents and
// two electors and checks, as a person would: the counts, a stopped
// agent's cell turning late and then expired (and its Node NotReady), a
// leader hand-over on the timeline with its fencing token, search
// narrowing the table, and a user without permissions seeing "forbidden".
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t, 1400, 1000)
	srv := startServer(t)
	// 4 s leases renewed every second: late after 1.5 s, expired after 4 s.
	agents := map[string]*testdeps.Process{}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		agents[n] = start(t, "agent "+n, "agent", "--node", n, "--kubeconfig", srv.Kubeconfig, "--node-lease-duration-seconds", "4")
	}
	_, url := startDashboard(t, srv.Kubeconfig, "--refresh", "200ms")
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}

	waitFor(t, ctx, "three healthy nodes", text("#count-healthy"), equals("3"))
	waitFor(t, ctx, "totals", text("#totals"), func(s string) bool { return strings.HasPrefix(s, "3 node leases · 3 nodes") })
	for i := range 3 {
		waitFor(t, ctx, "cell drawn healthy", cellStateJS(i), equals("healthy"))
	}

	t.Run("stopped agent turns late then expired", func(t *testing.T) {
		agents["node-b"].Stop()
		// Cells are in name order: node-b is the second. Its cell and the
		// counts are read together: the late phase lasts 2.5 s.
		seen := cellStateJS(1) + ` + "|" + ` + text("#count-late") + ` + "|" + ` + text("#count-expired")
		waitFor(t, ctx, "node-b's cell and the counts: late", seen, equals("late|1|0"))
		waitFor(t, ctx, "node-b's cell and the counts: expired", seen, equals("expired|0|1"))
		waitFor(t, ctx, "healthy count", text("#count-healthy"), equals("2"))
		waitFor(t, ctx, "NotReady count (node monitor marks node-b Unknown)", text("#count-notready"), equals("1"))
		for _, i := range []int{0, 2} {
			if s, err := evalString(ctx, cellStateJS(i)); err != nil || s != "healthy" {
				t.Errorf("cell %d is %q (%v), want healthy", i, s, err)
			}
		}
	})

	t.Run("leader change on the timeline with its fencing token", func(t *testing.T) {
		elect := func(id string) *testdeps.Process {
			return start(t, "elect "+id, "elect", "--kubeconfig", srv.Kubeconfig, "--lease", "default/orders-writer", "--identity", id,
				"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms", "--", "sleep", "600")
		}
		alpha := elect("alpha")
		leader := `(document.querySelector('.leader[data-lease="default/orders-writer"] .holder')||{}).textContent||''`
		waitFor(t, ctx, "alpha leads", leader, func(s string) bool { return strings.Contains(s, "holder alpha ") })
		elect("beta")
		alpha.Stop() // elect releases the lease on SIGTERM; beta acquires it
		entry := `(() => { const li = document.querySelector('.leader[data-lease="default/orders-writer"] li[data-to="beta"]');
			return li ? li.dataset.kind + "|" + li.dataset.token + "|" + li.textContent : "" })()`
		got := waitFor(t, ctx, "beta's transition", entry, func(s string) bool { return s != "" })
		if parts := strings.SplitN(got, "|", 3); parts[0] != "released" || parts[1] != "1" || !strings.Contains(parts[2], "alpha → beta") || !strings.Contains(parts[2], "token 1") {
			t.Errorf("timeline entry %q, want alpha → beta, released, token 1", got)
		}
		waitFor(t, ctx, "beta leads with token 1", leader, func(s string) bool { return strings.Contains(s, "holder beta ") && strings.Contains(s, "token 1") })
	})

	t.Run("search narrows the list", func(t *testing.T) {
		rows := `Array.from(document.querySelectorAll('#rows tbody tr')).map(r => r.dataset.namespace + "/" + r.dataset.name).join(",")`
		all := waitFor(t, ctx, "all leases listed", rows, func(s string) bool { return strings.Contains(s, "kube-node-lease/node-c") })
		if strings.Count(all, ",") < 3 {
			t.Fatalf("rows before search: %q, want the node leases and the leader leases", all)
		}
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#search"), "node-c")); err != nil {
			t.Fatalf("typing in the search box: %v", err)
		}
		waitFor(t, ctx, "only node-c", rows, equals("kube-node-lease/node-c"))
		waitFor(t, ctx, "match count", text("#rows-total"), equals("1 matching"))
		row := `(document.querySelector('#rows tbody tr[data-name="node-c"]')||{}).textContent||''`
		if s, _ := evalString(ctx, row); !strings.Contains(s, "Node/node-c") || !strings.Contains(s, "Ready") || !strings.Contains(s, "healthy") {
			t.Errorf("node-c's row %q, want owner Node/node-c, Ready, healthy", s)
		}
	})

	t.Run("forbidden resources are shown as such", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "nobody.kubeconfig")
		p := start(t, "credentials", "credentials", "user", "nobody", "--data-dir", srv.DataDir, "--out", kubeconfig, "--server", srv.URL)
		if code := p.Wait(startTimeout); code != 0 {
			t.Fatalf("credentials user nobody exited %d:\n%s", code, p.Output())
		}
		_, url := startDashboard(t, kubeconfig, "--refresh", "200ms")
		tab := newTab(t, ctx)
		if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
			t.Fatalf("opening %s: %v", url, err)
		}
		waitFor(t, tab, "leases forbidden", text(`#access [data-resource="leases"]`), func(s string) bool {
			return strings.HasPrefix(s, "leases: forbidden: ") && strings.Contains(s, `User "nobody" cannot list resource "leases"`)
		})
		waitFor(t, tab, "nodes forbidden", text(`#access [data-resource="nodes"]`), func(s string) bool { return strings.HasPrefix(s, "nodes: forbidden: ") })
	})
}
