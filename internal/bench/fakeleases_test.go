package bench

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// fakeLeases is an HTTPS server (HTTP/2, as client-go speaks to a real one)
// that serves just enough of the API for bench's setup and renewals, and
// records the Authorization header of every request by the object it names.
// It answers every conflictEvery-th update of a lease with 409, so that the
// renewer's GET and retry run too.
type fakeLeases struct {
	srv           *httptest.Server
	conflictEvery int
	// refuse, when set, answers every request with this error instead.
	refuse *apierrors.StatusError

	mu      sync.Mutex
	leases  map[string]*coordinationv1.Lease
	updates map[string]int
	// auth is every Authorization header seen per object: "lease/NAME",
	// "node/NAME", or "namespaces" and "lease-list" for the rest, followed
	// by withClientCert when the connection presented a certificate.
	auth map[string][]string
}

// withClientCert marks a recorded request whose connection presented a
// client certificate.
const withClientCert = " +cert"

func newFakeLeases(t *testing.T) *fakeLeases {
	t.Helper()
	f := &fakeLeases{conflictEvery: 4, leases: map[string]*coordinationv1.Lease{}, updates: map[string]int{}, auth: map[string][]string{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.EnableHTTP2 = true
	f.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// config reaches the server with credentials of its own: a bearer token
// and a client certificate, neither of which node clients may send.
// (The server's own key pair serves as the client certificate: the server
// only asks for one, it does not verify it.)
func (f *fakeLeases) config(t *testing.T) *rest.Config {
	t.Helper()
	pair := f.srv.TLS.Certificates[0]
	key, err := x509.MarshalPKCS8PrivateKey(pair.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[0]})
	return &rest.Config{
		Host:        f.srv.URL,
		BearerToken: adminToken,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   certPEM,
			CertData: certPEM,
			KeyData:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
		},
	}
}

// adminToken is the kubeconfig's own token in tests against fakeLeases.
const adminToken = "admin-token"

func (f *fakeLeases) seen() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string][]string, len(f.auth))
	for k, v := range f.auth {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func (f *fakeLeases) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := r.Header.Get("Authorization")
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		seen += withClientCert
	}
	path := r.URL.Path
	record := func(key string) { f.auth[key] = append(f.auth[key], seen) }
	if f.refuse != nil {
		f.answer(w, r, int(f.refuse.ErrStatus.Code), &f.refuse.ErrStatus)
		return
	}
	switch {
	case path == "/api/v1/namespaces" && r.Method == http.MethodPost:
		record("namespaces")
		f.answer(w, r, http.StatusCreated, f.decode(w, r))
	case path == "/api/v1/nodes" && r.Method == http.MethodPost:
		node, ok := f.decode(w, r).(*corev1.Node)
		if !ok {
			return
		}
		record("node/" + node.Name)
		node.UID = types.UID("uid-" + node.Name)
		f.answer(w, r, http.StatusCreated, node)
	case strings.HasPrefix(path, "/apis/coordination.k8s.io/v1/namespaces/"):
		f.serveLease(w, r, record)
	default:
		http.Error(w, "not served by the fake: "+r.Method+" "+path, http.StatusNotFound)
	}
}

func (f *fakeLeases) serveLease(w http.ResponseWriter, r *http.Request, record func(string)) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/"), "/")
	name := ""
	if len(parts) == 3 {
		name = parts[2]
	}
	switch {
	case name == "" && r.Method == http.MethodGet:
		record("lease-list")
		f.answer(w, r, http.StatusOK, &coordinationv1.LeaseList{})
	case name == "" && r.Method == http.MethodPost:
		lease, ok := f.decode(w, r).(*coordinationv1.Lease)
		if !ok {
			return
		}
		record("lease/" + lease.Name)
		lease.ResourceVersion = "1"
		f.leases[lease.Name] = lease
		f.answer(w, r, http.StatusCreated, lease)
	case r.Method == http.MethodGet:
		record("lease/" + name)
		if f.leases[name] == nil {
			f.answer(w, r, http.StatusNotFound, &apierrors.NewNotFound(leaseResource, name).ErrStatus)
			return
		}
		f.answer(w, r, http.StatusOK, f.leases[name])
	case r.Method == http.MethodPut:
		lease, ok := f.decode(w, r).(*coordinationv1.Lease)
		if !ok {
			return
		}
		record("lease/" + name)
		f.updates[name]++
		current := f.leases[name]
		if f.updates[name]%f.conflictEvery == 0 || current == nil || lease.ResourceVersion != current.ResourceVersion {
			f.answer(w, r, http.StatusConflict, &apierrors.NewConflict(leaseResource, name, fmt.Errorf("stale")).ErrStatus)
			return
		}
		rv, _ := strconv.Atoi(current.ResourceVersion)
		lease.ResourceVersion = strconv.Itoa(rv + 1)
		f.leases[name] = lease
		f.answer(w, r, http.StatusOK, lease)
	default:
		http.Error(w, "not served by the fake", http.StatusMethodNotAllowed)
	}
}

// decode reads the request's object in whatever encoding it came.
func (f *fakeLeases) decode(w http.ResponseWriter, r *http.Request) runtime.Object {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), r.Header.Get("Content-Type"))
	if !ok {
		http.Error(w, "unsupported content type", http.StatusUnsupportedMediaType)
		return nil
	}
	obj, _, err := info.Serializer.Decode(data, nil, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil
	}
	return obj
}

// answer writes obj as JSON, which every client here accepts.
func (f *fakeLeases) answer(w http.ResponseWriter, _ *http.Request, code int, obj runtime.Object) {
	if obj == nil {
		return
	}
	switch o := obj.(type) {
	case *coordinationv1.Lease:
		o.APIVersion, o.Kind = "coordination.k8s.io/v1", "Lease"
	case *coordinationv1.LeaseList:
		o.APIVersion, o.Kind = "coordination.k8s.io/v1", "LeaseList"
	case *corev1.Node:
		o.APIVersion, o.Kind = "v1", "Node"
	case *corev1.Namespace:
		o.APIVersion, o.Kind = "v1", "Namespace"
	case *metav1.Status:
		o.APIVersion, o.Kind = "v1", "Status"
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	_ = info.Serializer.Encode(obj, w)
}
