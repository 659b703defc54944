package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/discovery"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/openapi"
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// directHandler is the resource handler with its real store, watch cache
// and field managers, as serve wires them, minus HTTP/2 and TLS.
type directHandler struct {
	api     *apiserver.Server
	scheme  *runtime.Scheme
	metrics *apiserver.Metrics
	cache   *watchcache.Cache
	store   *embedded.Store
	// decodes counts the stored values the cache decoded.
	decodes *atomic.Int64
	// stopCache stops feeding the watch cache: from then on it lags the
	// store by every later write, as it does for a while under write load.
	stopCache func()
}

// newDirectHandler builds the handler; opts may change its Config (the
// pipeline tests' authenticators, authorizers, admission and limits).
func newDirectHandler(b testing.TB, opts ...func(*apiserver.Config)) *directHandler {
	b.Helper()
	store, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	scheme, err := served.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	resources := served.Stored(time.Now)
	oa, err := openapi.New(resources, discovery.DefaultVersionInfo().GitVersion)
	if err != nil {
		b.Fatal(err)
	}
	table := intern.New()
	cacheOpts := objects.NewForm(scheme, resources, table).CacheOptions(watchcache.Options{
		Prefix: "/registry/",
		Window: 100_000,
	})
	decode, decodes := cacheOpts.Decode, &atomic.Int64{}
	cacheOpts.Decode = func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
		decodes.Add(1)
		return decode(key, value, rev, prev)
	}
	cache := watchcache.New(store, cacheOpts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cache.Run(ctx)
	}()
	stopCache := func() {
		cancel()
		<-done
	}
	b.Cleanup(stopCache)
	if err := cache.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	metrics := apiserver.NewMetrics(nil)
	cfg := apiserver.Config{
		Resources:     resources,
		Scheme:        scheme,
		Store:         store,
		Cache:         cache,
		Intern:        table,
		TypeConverter: oa.TypeConverter(),
		// The benchmark drives the handler directly, without the TLS
		// layer that carries certificates: every request is an admin's.
		Authenticator: asUser(request.User{Name: "bench", Groups: []string{"system:masters", "system:authenticated"}}),
		Authorizer:    allowAll{},
		Metrics:       metrics,
	}
	for _, o := range opts {
		o(&cfg)
	}
	api, err := apiserver.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &directHandler{api: api, scheme: scheme, metrics: metrics, cache: cache, store: store, decodes: decodes, stopCache: stopCache}
}

// BenchmarkLeaseRenewal measures what one kubelet-style renewal (a protobuf
// PUT of the cached lease with a new renewTime) costs in the handler,
// storage (with its fsync) and watch cache, without the network: the
// figures of `leasehold bench max` minus HTTP/2 and TLS. It includes the
// client's encoding of the request and decoding of the response.
func BenchmarkLeaseRenewal(b *testing.B) {
	// plain leases all have the same managedFields; owned ones are a
	// kubelet's, whose managedFields name their Node's uid, so no two are
	// alike. More of them than the server's parsed-field-set cache holds
	// (4096) show what a real fleet's renewals cost.
	b.Run("plain", func(b *testing.B) { benchLeaseRenewal(b, 1000, false) })
	b.Run("owned", func(b *testing.B) { benchLeaseRenewal(b, 20000, true) })
}

func benchLeaseRenewal(b *testing.B, leases int, owned bool, opts ...func(*apiserver.Config)) {
	h := newDirectHandler(b, opts...)
	api, scheme := h.api, h.scheme
	pb := protobuf.NewSerializer(scheme, scheme)
	const ns = "kube-node-lease"
	createNamespace(b, api, ns)

	cached := make([]*coordinationv1.Lease, leases)
	for i := range cached {
		name := fmt.Sprintf("node-%04d", i)
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name),
				LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime:            &metav1.MicroTime{Time: time.Now()},
			},
		}
		if owned {
			// No Node exists: the garbage collector does not run here.
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}}
		}
		cached[i] = renewOnce(b, api, pb, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases", l, http.StatusCreated)
	}

	const parallelism = 32 // 64 concurrent renewers on 2 cores, as bench max
	workers := parallelism * goruntime.GOMAXPROCS(0)
	var next atomic.Int64
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart := processCPU(b)
	b.RunParallel(func(p *testing.PB) {
		// Goroutine w renews leases w, w+workers, ... in turn: no renewal
		// conflicts, and every lease is renewed, as in a fleet.
		first := int(next.Add(1) - 1)
		if first >= leases {
			b.Errorf("%d renewers for %d leases: some would share one", workers, leases)
			return
		}
		i := first
		for p.Next() {
			l := cached[i]
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
			cached[i] = renewOnce(b, api, pb, http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+l.Name, l, http.StatusOK)
			if i += workers; i >= leases {
				i = first
			}
		}
	})
	// Wall time per op mostly measures fsync batching; CPU per op is the
	// cost that bounds throughput on a busy machine.
	b.ReportMetric(float64((processCPU(b)-cpuStart).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func renewOnce(b testing.TB, api http.Handler, pb *protobuf.Serializer, method, path string, l *coordinationv1.Lease, want int) *coordinationv1.Lease {
	var body bytes.Buffer
	if err := pb.Encode(l, &body); err != nil {
		b.Fatal(err)
	}
	code, resp := do(api, method, path, "application/vnd.kubernetes.protobuf", body.Bytes())
	if code != want {
		b.Fatalf("%s %s: %d %s", method, path, code, resp)
	}
	out := &coordinationv1.Lease{}
	if _, _, err := pb.Decode(resp, nil, out); err != nil {
		b.Fatal(err)
	}
	return out
}

// createNamespace creates namespace ns through api: no namespace
// controller runs beside the direct handler to make it.
func createNamespace(tb testing.TB, api http.Handler, ns string) {
	tb.Helper()
	body := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`
	if code, out := do(api, http.MethodPost, "/api/v1/namespaces", "application/json", []byte(body)); code != http.StatusCreated {
		tb.Fatalf("creating namespace: %d %s", code, out)
	}
}

// lagFrom lets the watch cache follow the store up to resourceVersion rv,
// then stops it there: from then on it lags every later write.
func (h *directHandler) lagFrom(tb testing.TB, rv string) {
	tb.Helper()
	h.waitCached(tb, rv)
	h.stopCache()
}

// waitCached waits until the watch cache holds resourceVersion rv and
// returns it as a number.
func (h *directHandler) waitCached(tb testing.TB, rv string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.cache.WaitForRevision(ctx, n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func do(api http.Handler, method, path, contentType string, body []byte) (int, []byte) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "kubelet/v1.33.0 (linux/amd64) kubernetes/abcdef0")
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}
