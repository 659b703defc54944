package e2e

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// An etcd member whose client port was taken before it bound it exits; if
// whatever holds the port answers /health (another test's etcd did, in a
// CI run), the member must still count as not started, or the cluster
// runs one member short. This reproduces that with a port held by a
// /health handler of the test's own.
func TestEtcdMemberThatCannotBindIsNotHealthy(t *testing.T) {
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"health":"true"}`)
	})}
	go func() { _ = impostor.Serve(ln) }()
	t.Cleanup(func() { _ = impostor.Close() })

	client := "http://" + ln.Addr().String()
	peer := fmt.Sprintf("http://127.0.0.1:%d", testdeps.FreePort(t))
	m := testdeps.StartEtcdMember(t, bin, "m0", client, peer,
		"--name", "m0", "--data-dir", filepath.Join(t.TempDir(), "m0"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "m0="+peer, "--log-level", "error")
	if m.WaitHealthy(t) {
		t.Fatalf("a member that could not bind its port counted as healthy; log:\n%s", m.Output())
	}
}
