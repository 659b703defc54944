package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
)

// benchKeys is a fleet's worth of leases (a lease is about 300 bytes stored).
const benchKeys = 100_000

// benchSnapshot is a snapshot of benchKeys leases.
func benchSnapshot(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Revision: 2 * benchKeys, Prefix: Prefix})
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("x"), 300)
	for i := range benchKeys {
		kv := storage.KeyValue{Key: fmt.Sprintf("/registry/leases/kube-node-lease/node-%06d", i),
			Value: value, CreateRevision: int64(i + 1), ModRevision: int64(benchKeys + i + 1)}
		if err := w.Add(kv); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkRestoreEmbedded100k restores 100,000 leases into a new store.
func BenchmarkRestoreEmbedded100k(b *testing.B) {
	snap := benchSnapshot(b)
	b.SetBytes(int64(len(snap)))
	for b.Loop() {
		if _, _, err := RestoreEmbedded(bytes.NewReader(snap), filepath.Join(b.TempDir(), "db"), RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveEmbedded100k saves a store of 100,000 leases (one pebble
// snapshot, as serve's online endpoint does).
func BenchmarkSaveEmbedded100k(b *testing.B) {
	snap := benchSnapshot(b)
	dir := filepath.Join(b.TempDir(), "db")
	if _, _, err := RestoreEmbedded(bytes.NewReader(snap), dir, RestoreOptions{}); err != nil {
		b.Fatal(err)
	}
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(int64(len(snap)))
	for b.Loop() {
		if _, n, err := Save(context.Background(), s, io.Discard); err != nil || n != benchKeys {
			b.Fatalf("saved %d keys: %v", n, err)
		}
	}
}

// BenchmarkWriteEtcdDB100k writes 100,000 leases as an etcd snapshot database.
func BenchmarkWriteEtcdDB100k(b *testing.B) {
	snap := benchSnapshot(b)
	b.SetBytes(int64(len(snap)))
	for b.Loop() {
		if _, _, err := WriteEtcdDB(bytes.NewReader(snap), filepath.Join(b.TempDir(), "leases.db"), "/registry", RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
