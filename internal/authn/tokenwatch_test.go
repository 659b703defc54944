package authn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// writeTokens replaces path atomically with content, as an operator should.
func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// runTokenFile runs tf's reload loop until the test ends.
func runTokenFile(t *testing.T, tf *TokenFile) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := tf.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// testPollInterval is the token file poll interval of the reload tests.
const testPollInterval = 20 * time.Millisecond

// startTokenFile writes a token file holding content and runs its
// authenticator, polling every testPollInterval, until the test ends.
func startTokenFile(t *testing.T, content string) (string, *TokenFile, *logBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, path, content)
	log, logs := newTestLogger()
	tf, err := NewTokenFile(path, log, testPollInterval)
	if err != nil {
		t.Fatal(err)
	}
	runTokenFile(t, tf)
	return path, tf, logs
}

// known reports whether tf accepts token.
func known(tf *TokenFile, token string) bool {
	_, ok, _ := tf.AuthenticateToken(token)
	return ok
}

func TestTokenFileReloadAddAndRevoke(t *testing.T) {
	path, tf, logs := startTokenFile(t, "token-a,alice,1\n")
	if !known(tf, "token-a") || known(tf, "token-b") {
		t.Fatalf("initial set wrong")
	}

	writeTokens(t, path, "token-a,alice,1\ntoken-b,bob,2,devs\n")
	testdeps.Eventually(t, 10*testPollInterval, 5*time.Millisecond, "token-b added", func() bool { return known(tf, "token-b") })
	u, _, _ := tf.AuthenticateToken("token-b")
	if u.Name != "bob" || u.UID != "2" || len(u.Groups) != 1 || u.Groups[0] != "devs" {
		t.Fatalf("token-b is %+v", u)
	}

	writeTokens(t, path, "token-b,bob,2,devs\n")
	testdeps.Eventually(t, 10*testPollInterval, 5*time.Millisecond, "token-a revoked", func() bool { return !known(tf, "token-a") })
	if !known(tf, "token-b") {
		t.Fatalf("token-b lost when token-a was revoked")
	}
	if !strings.Contains(logs.String(), "token file reloaded") {
		t.Fatalf("no reload logged:\n%s", logs)
	}
	assertNoTokenLogged(t, logs.String(), "token-a", "token-b")
}

func TestTokenFileInvalidKeepsLastGoodSet(t *testing.T) {
	path, tf, logs := startTokenFile(t, "token-a,alice,1\n")

	writeTokens(t, path, "token-b,bob,2\ntoken-c,carol\n")
	testdeps.Eventually(t, 10*testPollInterval, 5*time.Millisecond, "warning logged", func() bool { return strings.Contains(logs.String(), "token file is invalid") })
	out := logs.String()
	if !strings.Contains(out, "line=2") || !strings.Contains(out, "must have at least 3 columns") {
		t.Fatalf("warning does not name line 2 and the problem:\n%s", out)
	}
	if !known(tf, "token-a") || known(tf, "token-b") {
		t.Fatalf("an invalid file changed the token set")
	}
	time.Sleep(5 * testPollInterval)
	if n := strings.Count(logs.String(), "token file is invalid"); n != 1 {
		t.Fatalf("the same invalid file was reported %d times", n)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	testdeps.Eventually(t, 10*testPollInterval, 5*time.Millisecond, "removal logged", func() bool { return strings.Contains(logs.String(), "token file cannot be read") })
	if !known(tf, "token-a") {
		t.Fatalf("removing the file revoked the tokens")
	}

	writeTokens(t, path, "token-c,carol,3\n")
	testdeps.Eventually(t, 10*testPollInterval, 5*time.Millisecond, "fixed file loaded", func() bool { return known(tf, "token-c") && !known(tf, "token-a") })
	assertNoTokenLogged(t, logs.String(), "token-a", "token-b", "token-c")
}

// A rewrite that keeps the file's size and lands in the same mtime tick
// (coarse file system clocks) is still picked up.
func TestTokenFileSameStampRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("token-a,alice,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := newTestLogger()
	tf, err := NewTokenFile(path, log, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mtime := tf.seen.ModTime()
	if err := os.WriteFile(path, []byte("token-z,alice,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	tf.poll()
	if known(tf, "token-a") || !known(tf, "token-z") {
		t.Fatalf("same-size rewrite in the same mtime tick was missed")
	}
}

// With the default interval, a revoked token stops working within about a
// second.
func TestTokenFileRevocationWithinDefaultInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 1 s default poll")
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, path, "token-a,alice,1\ntoken-b,bob,2\n")
	log, _ := newTestLogger()
	tf, err := NewTokenFile(path, log, 0)
	if err != nil {
		t.Fatal(err)
	}
	runTokenFile(t, tf)
	writeTokens(t, path, "token-b,bob,2\n")
	took := testdeps.Eventually(t, DefaultTokenFilePollInterval+time.Second, 5*time.Millisecond, "token-a revoked", func() bool { return !known(tf, "token-a") })
	t.Logf("revocation took effect after %s", took)
}

func assertNoTokenLogged(t *testing.T, logs string, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		if strings.Contains(logs, tok) {
			t.Fatalf("log mentions token %q:\n%s", tok, logs)
		}
	}
}
