package apiserver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/controller/namespaces"
	"github.com/leasehold/leasehold/internal/discovery"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/openapi"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/watchcache"
)

const (
	leasesPath = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	// readDeadline bounds reads and watches sent by the fuzzers: a watch
	// only ends when its request does, and a read of a future
	// resourceVersion waits for it (504 when it never comes).
	readDeadline = 150 * time.Millisecond
	// writeDeadline bounds writes, which wait for an fsync.
	writeDeadline = 20 * time.Second
	// nonResourceHeader marks responses of the non-resource handler, whose
	// 404 is plain text as kube-apiserver's is.
	nonResourceHeader = "X-Fuzz-Non-Resource"
)

// fuzzServer is the API request path assembled as `leasehold serve` does
// (real embedded store, watch cache, scheme, OpenAPI type converter), minus
// TLS and sockets: requests go straight to ServeHTTP, which is what makes
// fuzzing fast. Every caller is an admin (system:masters).
type fuzzServer struct {
	api     *apiserver.Server
	decoder runtime.Decoder
	logs    *lockedBuffer
}

// newFuzzServer builds a server on a temporary data dir; everything it
// starts is stopped when tb ends.
func newFuzzServer(tb testing.TB) *fuzzServer {
	tb.Helper()
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := embedded.Open(filepath.Join(scratchDir(tb), "db"), embedded.Options{Logger: log})
	if err != nil {
		tb.Fatalf("opening store: %v", err)
	}
	scheme, err := served.NewScheme()
	if err != nil {
		tb.Fatal(err)
	}
	resources := served.Stored(time.Now)
	oa, err := openapi.New(resources, discovery.DefaultVersionInfo().GitVersion)
	if err != nil {
		tb.Fatalf("openapi: %v", err)
	}
	table := intern.New()
	cache := watchcache.New(store, objects.NewForm(scheme, resources, table).CacheOptions(watchcache.Options{
		Prefix:        "/registry/",
		Window:        10_000,
		WatcherBuffer: 1000,
		Logger:        log,
	}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := cache.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("watch cache stopped", "err", err)
		}
	}()
	stopWatches := make(chan struct{})
	tb.Cleanup(func() {
		close(stopWatches)
		cancel()
		wg.Wait()
		if err := store.Close(); err != nil {
			tb.Errorf("closing store: %v", err)
		}
	})
	if err := cache.WaitReady(ctx); err != nil {
		tb.Fatalf("watch cache: %v", err)
	}
	api, err := apiserver.New(apiserver.Config{
		Resources:     resources,
		Scheme:        scheme,
		Store:         store,
		Cache:         cache,
		Intern:        table,
		TypeConverter: oa.TypeConverter(),
		Authenticator: asUser(request.User{Name: "fuzz-admin", Groups: []string{"system:masters"}}),
		Authorizer:    allowAll{},
		NonResource: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(nonResourceHeader, "1")
			http.NotFound(w, r)
		}),
		Logger:      log,
		StopWatches: stopWatches,
	})
	if err != nil {
		tb.Fatalf("apiserver: %v", err)
	}
	loopback, err := kubernetes.NewForConfig(api.ServerLoopbackConfig())
	if err != nil {
		tb.Fatal(err)
	}
	if err := namespaces.Ensure(ctx, loopback, nsregistry.System); err != nil {
		tb.Fatalf("system namespaces: %v", err)
	}
	return &fuzzServer{api: api, decoder: answerDecoder(tb), logs: logs}
}

// answerDecoder decodes every kind an answer can be, in every encoding:
// client-go's types plus the meta.k8s.io ones (Table, metadata lists).
func answerDecoder(tb testing.TB) runtime.Decoder {
	tb.Helper()
	s := runtime.NewScheme()
	if err := clientscheme.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		tb.Fatal(err)
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}

// scratchDir is a temporary directory for the store, in memory (/dev/shm)
// where the machine has one: the fuzzers test decoding, not durability, and
// an fsync to disk per write would cut their throughput several times.
func scratchDir(tb testing.TB) string {
	tb.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "leasehold-fuzz-"); err == nil {
			tb.Cleanup(func() {
				if err := os.RemoveAll(dir); err != nil {
					tb.Errorf("removing %s: %v", dir, err)
				}
			})
			return dir
		}
	}
	return tb.TempDir()
}

// fuzzRequest is one request a fuzzer sends.
type fuzzRequest struct {
	method, path, rawQuery string
	contentType, accept    string
	body                   []byte
}

// fuzzResponse is the server's answer.
type fuzzResponse struct {
	code   int
	header http.Header
	body   []byte
}

// do serves req and checks the properties every answer must have: no 5xx
// other than 504 for a resourceVersion the store never reached, and every
// 4xx from the resource path is a Status carrying the same code.
func (s *fuzzServer) do(t testing.TB, req fuzzRequest) fuzzResponse {
	t.Helper()
	deadline := writeDeadline
	if req.method == http.MethodGet {
		deadline = readDeadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	u := &url.URL{Scheme: "http", Host: "fuzz.local", Path: req.path, RawQuery: req.rawQuery}
	r, err := http.NewRequestWithContext(ctx, req.method, u.String(), bytes.NewReader(req.body))
	if err != nil {
		t.Skipf("not a valid HTTP request: %v", err)
	}
	if req.contentType != "" {
		r.Header.Set("Content-Type", req.contentType)
	}
	if req.accept != "" {
		r.Header.Set("Accept", req.accept)
	}
	s.logs.Reset()
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, r)
	resp := fuzzResponse{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	s.check(t, req, resp)
	return resp
}

func (s *fuzzServer) check(t testing.TB, req fuzzRequest, resp fuzzResponse) {
	t.Helper()
	if resp.code < 400 {
		return
	}
	describe := func() string {
		return fmt.Sprintf("%s %s?%s (Content-Type %q, Accept %q, body %q)", req.method, req.path, req.rawQuery, req.contentType, req.accept, truncate(req.body))
	}
	if resp.header.Get(nonResourceHeader) != "" {
		if resp.code != http.StatusNotFound {
			t.Fatalf("%s: non-resource answer %d", describe(), resp.code)
		}
		return
	}
	st, err := s.status(resp)
	if err != nil {
		t.Fatalf("%s: %d answer is not a Status: %v: %q", describe(), resp.code, err, truncate(resp.body))
	}
	if int(st.Code) != resp.code || st.Status != metav1.StatusFailure {
		t.Fatalf("%s: answered %d with Status code %d status %q", describe(), resp.code, st.Code, st.Status)
	}
	if resp.code >= 500 && !(resp.code == http.StatusGatewayTimeout && st.Reason == metav1.StatusReasonTimeout &&
		strings.Contains(st.Message, "Too large resource version")) {
		t.Fatalf("%s: server error %d %s: %s\nserver log:\n%s", describe(), resp.code, st.Reason, st.Message, s.logs.String())
	}
}

// status decodes a Status in whatever encoding the server chose.
func (s *fuzzServer) status(resp fuzzResponse) (*metav1.Status, error) {
	obj, _, err := s.decoder.Decode(resp.body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	st, ok := obj.(*metav1.Status)
	if !ok {
		return nil, fmt.Errorf("decoded a %T", obj)
	}
	return st, nil
}

// lease decodes a Lease answer in whatever encoding the server chose.
func (s *fuzzServer) lease(t testing.TB, what string, resp fuzzResponse) *coordinationv1.Lease {
	t.Helper()
	obj, _, err := s.decoder.Decode(resp.body, nil, nil)
	if err != nil {
		t.Fatalf("%s: %d answer (%s) does not decode: %v: %q", what, resp.code, resp.header.Get("Content-Type"), err, truncate(resp.body))
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		t.Fatalf("%s: %d answer decoded to %T", what, resp.code, obj)
	}
	return l
}

func truncate(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// lockedBuffer is the server's log, written by its goroutines and read by
// the fuzz function when a property fails.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var _ io.Writer = (*lockedBuffer)(nil)

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
