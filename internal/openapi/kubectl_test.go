package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/leasehold/leasehold/internal/registry"
)

// kubectlBinary finds kubectl.<minor> next to the kubectl on PATH; the test
// machine ships one binary per supported minor version.
func kubectlBinary(t *testing.T, minor string) string {
	t.Helper()
	onPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH")
	}
	real, err := filepath.EvalSymlinks(onPath)
	if err != nil {
		t.Skipf("resolving kubectl: %v", err)
	}
	bin := filepath.Join(filepath.Dir(real), "kubectl."+minor)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no %s", bin)
	}
	return bin
}

// discoveryServer serves the OpenAPI handler plus the legacy discovery
// documents kubectl needs to map "leases" to a group version, all derived
// from set. POSTs of leases are answered by echoing the body, recording the
// fieldValidation query parameter kubectl chose to send.
type discoveryServer struct {
	mu              sync.Mutex
	fieldValidation []string
}

func (d *discoveryServer) start(t *testing.T, o *OpenAPI, set *registry.Set) *httptest.Server {
	mux := http.NewServeMux()
	o.Register(mux)
	writeJSON := func(path string, v interface{}) {
		body, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	writeJSON("/version", version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.0"})
	writeJSON("/api", metav1.APIVersions{Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1"}}})
	groups := metav1.APIGroupList{}
	lists := map[string]*metav1.APIResourceList{}
	for _, gv := range set.GroupVersions() {
		lists[gv.String()] = &metav1.APIResourceList{GroupVersion: gv.String()}
		if gv.Group == "" {
			continue
		}
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		found := false
		for i := range groups.Groups {
			if groups.Groups[i].Name == gv.Group {
				groups.Groups[i].Versions = append(groups.Groups[i].Versions, gvd)
				found = true
			}
		}
		if !found {
			groups.Groups = append(groups.Groups, metav1.APIGroup{Name: gv.Group,
				Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
		}
	}
	writeJSON("/apis", groups)
	for _, r := range set.All() {
		l := lists[r.GroupVersion.String()]
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.Resource, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
			ShortNames: r.ShortNames,
			Verbs:      metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		})
	}
	for gv, l := range lists {
		if gv == "v1" {
			writeJSON("/api/v1", l)
		} else {
			writeJSON("/apis/"+gv, l)
		}
	}
	mux.HandleFunc("POST /apis/coordination.k8s.io/v1/namespaces/default/leases", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.fieldValidation = append(d.fieldValidation, r.URL.Query().Get("fieldValidation"))
		d.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (d *discoveryServer) lastFieldValidation() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.fieldValidation...)
}

// TestKubectl runs real kubectl binaries (oldest and newest supported)
// against the documents: explain through OpenAPI v3 and v2 (protobuf), and
// the server-side field validation detection that create/apply perform.
func TestKubectl(t *testing.T) {
	set := testSet()
	o := newTestOpenAPI(t)
	for _, minor := range []string{"1.27", "1.33"} {
		t.Run(minor, func(t *testing.T) {
			bin := kubectlBinary(t, minor)
			d := &discoveryServer{}
			srv := d.start(t, o, set)
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: " + srv.URL +
				"\ncontexts:\n- name: t\n  context:\n    cluster: t\n    user: t\n    namespace: default\ncurrent-context: t\nusers:\n- name: t\n  user: {}\n"
			if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(stdin string, args ...string) string {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECTL_EXPLAIN_OPENAPIV3=true")
				cmd.Stdin = strings.NewReader(stdin)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
				}
				return out.String()
			}

			out := run("", "explain", "leases")
			for _, want := range []string{"Lease", "coordination.k8s.io", "spec", "LeaseSpec"} {
				if !strings.Contains(out, want) {
					t.Errorf("explain leases (v3) lacks %q:\n%s", want, out)
				}
			}
			out = run("", "explain", "leases.spec.holderIdentity")
			if !strings.Contains(out, "holderIdentity") || !strings.Contains(out, "string") {
				t.Errorf("explain leases.spec.holderIdentity:\n%s", out)
			}
			out = run("", "explain", "nodes.status.conditions", "--output=plaintext-openapiv2")
			if !strings.Contains(out, "NodeCondition") && !strings.Contains(out, "lastHeartbeatTime") {
				t.Errorf("explain nodes.status.conditions (v2):\n%s", out)
			}

			// kubectl always sends fieldValidation, but validates on the
			// client (against the OpenAPI schema) unless the v3 document
			// shows the PATCH operation accepts fieldValidation. With an
			// unknown field in the object, the request reaches the server
			// only if that detection succeeds; otherwise kubectl rejects
			// the object itself.
			lease := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: x\n  namespace: default\nspec:\n  holderIdentity: a\n  notAField: 1\n"
			run(lease, "create", "-f", "-", "--validate=strict")
			if got := d.lastFieldValidation(); len(got) != 1 || got[0] != "Strict" {
				t.Errorf("kubectl %s sent fieldValidation %q, want one POST with Strict (server-side validation detected)", minor, got)
			}
		})
	}
}
