package leasecopy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// writeUnreachableKubeconfig writes a kubeconfig naming a port nothing
// listens on (a free port, closed again).
func writeUnreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, testdeps.FreePort(t))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
