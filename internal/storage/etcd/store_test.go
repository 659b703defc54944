package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// newTestStore connects a Store to endpoint under prefix, closed at cleanup.
func newTestStore(t testing.TB, endpoint, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: []string{endpoint}, Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	var n atomic.Int64
	storagetest.Run(t, func(t *testing.T) storage.Interface {
		// Every subtest gets its own client and its own Prefix on the one
		// server, which also exercises the prefix mapping.
		return newTestStore(t, endpoint, fmt.Sprintf("/conformance-%d/registry", n.Add(1)))
	})
}
