package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// DefaultTick is how often the page is updated: twice a second keeps a
// renewal's way to the screen under a second, with a heat-map delta of
// about 33 KB (base64) per tick at 100,000 nodes renewing every 10 s
// (BenchmarkTick100k).
const DefaultTick = 500 * time.Millisecond

// Config is how `leasehold dashboard` runs.
type Config struct {
	// Kubeconfig is the kubeconfig file; "" uses $KUBECONFIG and
	// ~/.kube/config as kubectl does.
	Kubeconfig string
	// Listen is the loopback host:port to serve on (port 0: any free one).
	Listen string
	// Tick is how often summaries are computed and sent (DefaultTick if 0).
	Tick time.Duration
	// Out receives the line with the page's URL.
	Out io.Writer
	Log *slog.Logger
}

// Dashboard serves the page for one Fleet.
type Dashboard struct {
	fleet   *Fleet
	clock   clock.Clock
	pub     *publisher
	streams *streams
	// opened is poked (buffered 1) when a page opens its stream, so that
	// Run, which publishes nothing while no page is open, publishes at once.
	opened chan struct{}
}

// New returns a Dashboard showing fleet.
func New(fleet *Fleet, clk clock.Clock) *Dashboard {
	return &Dashboard{fleet: fleet, clock: clk, pub: newPublisher(), streams: &streams{byID: map[string]*stream{}},
		opened: make(chan struct{}, 1)}
}

// Run serves the dashboard until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %q: the dashboard serves your credentials' view of the cluster, so it listens on loopback only", cfg.Listen)
	}
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Protobuf is several times cheaper to decode than JSON at 10,000
	// renewals a second; every Kubernetes API server offers it.
	restCfg = rest.CopyConfig(restCfg)
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	restCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	restCfg.UserAgent = "leasehold-dashboard"
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	clk := clock.RealClock{}
	fleet := NewFleet(clk)
	d := New(fleet, clk)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := startSources(ctx, cs, fleet)
	if err != nil {
		_ = ln.Close()
		return err
	}
	// The informers stop when ctx does; stop waits for them.
	defer func() { cancel(); src.stop() }()

	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(cfg.Out, "Dashboard: http://%s/\n", ln.Addr())
	cfg.Log.Info("serving dashboard", "address", "http://"+ln.Addr().String()+"/", "server", restCfg.Host)

	tick := cfg.Tick
	if tick <= 0 {
		tick = DefaultTick
	}
	d.Publish(src.access)
	t := clk.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			err := srv.Shutdown(sctx)
			<-served
			return err
		case err := <-served:
			return fmt.Errorf("serving dashboard: %w", err)
		case <-t.C():
			// No page, no summary: the Fleet still follows every change,
			// and the next page to open gets a frame made for it.
			if d.streams.count() > 0 {
				d.Publish(src.access)
			} else {
				d.pub.stale()
			}
		case <-d.opened:
			d.Publish(src.access)
		}
	}
}

// Publish computes a summary with access's report of what can be read,
// and hands it to every open page.
func (d *Dashboard) Publish(access func() map[string]string) {
	now := d.clock.Now()
	a := access()
	s, heat := d.fleet.Snapshot(now)
	s.Access = a
	b, err := json.Marshal(s)
	if err != nil { // Summary holds only strings, numbers and times
		panic(fmt.Sprintf("dashboard: encoding summary: %v", err))
	}
	d.pub.publish(b, heat, now)
}

// Handler serves the page, its assets, the stream (/events), view changes
// (/view) and heat-map cell names (/cell?i=N). Requests whose Host is not
// a loopback name are refused, so that a web site cannot read the
// dashboard through DNS rebinding.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(assets))
	mux.HandleFunc("/events", d.serveEvents)
	mux.HandleFunc("/view", d.serveView)
	mux.HandleFunc("/cell", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil {
			http.Error(w, "i: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, d.fleet.CellName(i))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "the dashboard answers only to loopback host names", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'")
		mux.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
