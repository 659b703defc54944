package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// pollTimeout bounds how long the page may take to show something.
const pollTimeout = 30 * time.Second

// browser starts headless Chromium (installing Debian's chromium package on
// a fresh machine, or skipping the test loudly) and returns a tab's
// context; the browser is closed when the test ends.
func browser(t testing.TB, width, height int) context.Context {
	t.Helper()
	path := testdeps.Debian(t, "chromium", "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(width, height),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium %s: %v", path, err)
	}
	return ctx
}

// newTab opens another tab in ctx's browser.
func newTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	return tab
}

// evalString evaluates a JavaScript expression in the page.
func evalString(ctx context.Context, expr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("String(%s)", expr)))
}

// waitFor polls expr until ok accepts its value, failing the test after
// pollTimeout with what it saw last. It returns the accepted value.
func waitFor(t testing.TB, ctx context.Context, what, expr string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	var last string
	var err error
	for time.Now().Before(deadline) {
		if last, err = evalString(ctx, expr); err == nil && ok(last) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: after %v the page shows %q (error %v)", what, pollTimeout, last, err)
	return ""
}

func equals(want string) func(string) bool { return func(s string) bool { return s == want } }

// text is the JavaScript for an element's visible text ("" if absent).
func text(selector string) string {
	return fmt.Sprintf("((document.querySelector(%q)||{}).textContent||'')", selector)
}

// cellStateFn is a JavaScript function of i that says what a person sees
// at heat-map cell i: the drawn pixel's colour is matched to the nearest
// palette entry, whose byte the legend places in healthy (<38), late
// (<101) or expired; "none" when the cell is not drawn.
const cellStateFn = `((i) => {
  const px = window.dash.pixel(i); if (!px) return "none";
  let best = -1, bd = 1e9;
  window.dash.palette.forEach((c, b) => { const d = (c[0]-px[0])**2 + (c[1]-px[1])**2 + (c[2]-px[2])**2; if (d < bd) { bd = d; best = b; } });
  if (bd > 30) return "none";
  return best === 0 ? "unknown" : best < 38 ? "healthy" : best < 101 ? "late" : "expired";
})`

// cellStateJS is the state a person sees at heat-map cell i (cellStateFn).
func cellStateJS(i int) string { return fmt.Sprintf("%s(%d)", cellStateFn, i) }
