package bench

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTokenFile parses a token file as kube-apiserver does (encoding/csv,
// any number of fields) and fails the test if it cannot.
func readTokenFile(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("token file is not CSV: %v\n%s", err, data)
	}
	return records
}

// nodeTokensIn returns each node's token as the file states it.
func nodeTokensIn(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rec := range readTokenFile(t, path) {
		if node, ok := strings.CutPrefix(rec[1], "system:node:"); ok {
			out[node] = rec[0]
		}
	}
	return out
}

func TestNodeTokenFileIsKubeCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	// Someone else's records, the last without a newline, stay as they are;
	// node-000001 already has a token, which is kept.
	before := "admin-token,admin,admin-uid,\"system:masters,ops\"\nkeep-me,system:node:node-000001,uid-1,system:nodes"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"node-000000", "node-000001", "node-000002"}
	tokens, err := EnsureNodeTokens(path, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if tokens.Added() != 2 || tokens.Path() != path {
		t.Fatalf("added %d tokens to %s, want 2 to %s", tokens.Added(), tokens.Path(), path)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", info.Mode().Perm())
	}
	records := readTokenFile(t, path)
	if len(records) != 4 {
		t.Fatalf("%d records, want 4: %q", len(records), records)
	}
	if want := []string{"admin-token", "admin", "admin-uid", "system:masters,ops"}; strings.Join(records[0], "|") != strings.Join(want, "|") {
		t.Errorf("first record %q, want %q kept", records[0], want)
	}
	seen := map[string]bool{}
	for i, rec := range records[1:] {
		node := []string{"node-000001", "node-000000", "node-000002"}[i]
		if len(rec) != 4 || rec[0] == "" || rec[1] != "system:node:"+node || rec[2] == "" || rec[3] != "system:nodes" {
			t.Errorf("record %q, want token,system:node:%s,uid,system:nodes", rec, node)
		}
		if seen[rec[0]] || strings.ContainsAny(rec[0], ", \"\n") {
			t.Errorf("token %q of %s repeated or not a plain field", rec[0], node)
		}
		seen[rec[0]] = true
		if auth, err := tokens.authorization(node); err != nil || len(auth) != 1 || auth[0] != "Bearer "+rec[0] {
			t.Errorf("authorization of %s = %q, %v; want Bearer %s", node, auth, err, rec[0])
		}
	}
	if _, err := tokens.authorization("node-000009"); err == nil {
		t.Error("a node with no token has an authorization")
	}

	// Run again: nothing to add, the file stays as it is.
	written, _ := os.ReadFile(path)
	again, err := EnsureNodeTokens(path, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); again.Added() != 0 || !bytes.Equal(now, written) {
		t.Errorf("second run added %d tokens or changed the file", again.Added())
	}
}

func TestNodeTokenFileKubeWouldRefuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("token,user\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureNodeTokens(path, []string{"n"})
	if err == nil || !strings.Contains(err.Error(), "must have at least 3 columns (token, user name, user uid), found 2") {
		t.Fatalf("got %v, want kube-apiserver's refusal of a 2-column record", err)
	}
}
