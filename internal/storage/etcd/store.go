package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// Store is a storage.Interface on an etcd cluster.
type Store struct {
	client *clientv3.Client
	// kv sends the write transactions (txn.go).
	kv   pb.KVClient
	keys keyMap
	log  *slog.Logger
	// callTimeout bounds each request (deadline.go).
	callTimeout time.Duration

	// progress says whether watches get progress notifications (progress.go).
	progress progressSupport

	// compacted is the newest compaction this Store knows of (its own
	// Compact calls and CompactedRevision's searches); it only grows.
	compacted atomic.Int64

	// lifecycle guards closed; every request and every goroutine is counted
	// in inflight while holding it for reading, so once Close has set closed
	// no new one starts and Close's Wait sees them all.
	lifecycle sync.RWMutex
	closed    bool
	inflight  sync.WaitGroup
	// closing ends the watches and the compactor.
	closing context.Context
	stop    context.CancelFunc
}

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("etcd: store is closed")

// acquire counts one request or goroutine in; release counts it out.
func (s *Store) acquire() error {
	s.lifecycle.RLock()
	defer s.lifecycle.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

func (s *Store) release() { s.inflight.Done() }

var _ storage.Interface = (*Store)(nil)

// New connects to the cluster and checks it answers a linearizable read
// within cfg.DialTimeout (or before ctx ends), so a wrong endpoint fails here
// rather than on the first request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         tc,
		Logger:      newZapLogger(cfg.Logger),
		DialOptions: slices.Concat(pickFirst, reconnect),
		// kube-apiserver's keepalive for its etcd client: a connection
		// that stops carrying anything (a partition that drops packets)
		// is closed after about 40 s instead of when TCP gives up.
		DialKeepAliveTime:    keepaliveTime,
		DialKeepAliveTimeout: keepaliveTimeout,
		// clientv3's defaults, spelled out for txn.go's own requests.
		MaxCallSendMsgSize: maxCallSendMsgSize,
		MaxCallRecvMsgSize: maxCallRecvMsgSize,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connecting to %v: %w", cfg.Endpoints, err)
	}
	closing, stop := context.WithCancel(context.Background())
	s := &Store{client: client, kv: clientv3.RetryKVClient(client), keys: keyMap{prefix: cfg.Prefix}, log: cfg.Logger, callTimeout: cfg.CallTimeout, closing: closing, stop: stop}

	s.preferLeader(ctx)
	pingCtx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	rev, err := s.CurrentRevision(pingCtx)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("etcd: first read from %v: %w", cfg.Endpoints, err)
	}
	s.log.Info("connected to etcd", "endpoints", cfg.Endpoints, "prefix", cfg.Prefix, "revision", rev)
	if cfg.CompactInterval > 0 {
		s.inflight.Add(1) // nobody can have closed s yet
		go s.compactLoop(cfg.CompactInterval)
	}
	if len(cfg.Endpoints) > 1 {
		s.inflight.Add(1)
		go s.followLeader(cfg.leaderCheck)
	}
	return s, nil
}

// Close refuses new calls, ends every watch, the compactor and the leader
// check, waits for them and for the requests in flight to get etcd's
// answer, and then closes the connection. A second Close does nothing.
func (s *Store) Close() error {
	s.lifecycle.Lock()
	if s.closed {
		s.lifecycle.Unlock()
		return nil
	}
	s.closed = true
	s.lifecycle.Unlock()
	s.stop()
	s.inflight.Wait()
	if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd: closing client: %w", err)
	}
	return nil
}

// Client is the underlying etcd client, for callers that need etcd itself
// (benchmarks comparing the driver with raw etcd requests).
func (s *Store) Client() *clientv3.Client { return s.client }
