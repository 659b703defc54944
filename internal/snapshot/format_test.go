package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

func testKVs(n int) []storage.KeyValue {
	kvs := make([]storage.KeyValue, n)
	for i := range kvs {
		kvs[i] = storage.KeyValue{
			Key:   fmt.Sprintf("/registry/leases/ns/l-%04d", i),
			Value: bytes.Repeat([]byte{byte(i)}, i%7),
			// Create and mod revisions interleave as real writes do.
			CreateRevision: int64(i + 1), ModRevision: int64(n + i + 1),
		}
	}
	return kvs
}

func writeSnapshot(t *testing.T, rev int64, kvs []storage.KeyValue) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Revision: rev, Prefix: Prefix, Source: "test", Created: time.Unix(1, 0).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if err := w.Add(kv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(b []byte) (Header, []storage.KeyValue, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return Header{}, nil, err
	}
	var kvs []storage.KeyValue
	for {
		kv, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Header(), kvs, nil
		}
		if err != nil {
			return r.Header(), kvs, err
		}
		kvs = append(kvs, kv)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	kvs := testKVs(50)
	b := writeSnapshot(t, 100, kvs)
	h, got, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != 100 || h.Prefix != Prefix || h.Source != "test" {
		t.Errorf("header %+v", h)
	}
	if len(got) != len(kvs) {
		t.Fatalf("read %d keys, wrote %d", len(got), len(kvs))
	}
	for i := range kvs {
		if got[i].Key != kvs[i].Key || !bytes.Equal(got[i].Value, kvs[i].Value) ||
			got[i].ModRevision != kvs[i].ModRevision || got[i].CreateRevision != kvs[i].CreateRevision {
			t.Errorf("key %d: read %+v, wrote %+v", i, got[i], kvs[i])
		}
	}
}

// Every truncation and every flipped byte is refused: a restore never
// takes a partial or damaged file for a whole one.
func TestFormatRefusesDamage(t *testing.T) {
	b := writeSnapshot(t, 100, testKVs(20))
	for n := 0; n < len(b); n++ {
		if _, _, err := readAll(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: %v, want ErrCorrupt", n, len(b), err)
		}
	}
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x20
		if _, _, err := readAll(d); err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
	}
	if _, _, err := readAll(append(bytes.Clone(b), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCorrupt", err)
	}
}

func TestWriterRefusesDisorderAndFutureRevisions(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{Revision: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(storage.KeyValue{Key: "/registry/b", CreateRevision: 1, ModRevision: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(storage.KeyValue{Key: "/registry/a", CreateRevision: 1, ModRevision: 3}); err == nil {
		t.Error("a key before the previous one was accepted")
	}
	if err := w.Add(storage.KeyValue{Key: "/registry/c", CreateRevision: 1, ModRevision: 11}); err == nil {
		t.Error("a key newer than the snapshot's revision was accepted")
	}
}
