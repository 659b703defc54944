package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// magic starts every snapshot file; the digit is the format's version.
const magic = "LEASEHOLD-SNAPSHOT-1\n"

// Record tags.
const (
	tagKey byte = 'k'
	tagEnd byte = 'e'
)

// maxHeader and maxField bound what a reader allocates for a corrupt length.
const (
	maxHeader = 1 << 20
	maxField  = 1 << 30
)

// ErrCorrupt is returned for a file that is not a whole, intact snapshot.
var ErrCorrupt = errors.New("snapshot file is corrupt or truncated")

// Header describes a snapshot.
type Header struct {
	// Revision is the store revision every key was read at.
	Revision int64 `json:"revision"`
	// Prefix is the key prefix the snapshot holds (every key starts with it).
	Prefix string `json:"prefix"`
	// Source says which store was read ("embedded" or "etcd").
	Source string `json:"source"`
	// Created is when the snapshot was taken.
	Created time.Time `json:"created"`
}

// Writer writes a snapshot: NewWriter writes the header, Add each key in
// ascending key order, Close the trailer. It buffers; Close flushes.
type Writer struct {
	w     *bufio.Writer
	sum   hash.Hash // of every byte before the digest
	last  string
	count uint64
	rev   int64
	buf   []byte
}

// NewWriter writes the header to w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	sw := &Writer{w: bufio.NewWriterSize(w, 256<<10), sum: sha256.New(), rev: h.Revision}
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	b := append([]byte(magic), binary.AppendUvarint(nil, uint64(len(hj)))...)
	if err := sw.write(append(b, hj...)); err != nil {
		return nil, fmt.Errorf("write snapshot header: %w", err)
	}
	return sw, nil
}

// Add writes one key; keys must come in strictly ascending order, at or
// below the header's revision.
func (sw *Writer) Add(kv storage.KeyValue) error {
	if sw.count > 0 && kv.Key <= sw.last {
		return fmt.Errorf("snapshot: key %q after %q: keys must ascend", kv.Key, sw.last)
	}
	if err := checkRevisions(kv, sw.rev); err != nil {
		return err
	}
	b := append(sw.buf[:0], tagKey)
	b = binary.AppendUvarint(b, uint64(len(kv.Key)))
	b = append(b, kv.Key...)
	b = binary.AppendUvarint(b, uint64(kv.CreateRevision))
	b = binary.AppendUvarint(b, uint64(kv.ModRevision))
	b = binary.AppendUvarint(b, uint64(len(kv.Value)))
	sw.buf = b
	if err := sw.write(b); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err := sw.write(kv.Value); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	sw.last = kv.Key
	sw.count++
	return nil
}

// Count is the number of keys added so far.
func (sw *Writer) Count() uint64 { return sw.count }

// Close writes the trailer (the key count and the SHA-256 of everything
// before the digest) and flushes. It does not close the underlying writer.
func (sw *Writer) Close() error {
	if err := sw.write(binary.AppendUvarint([]byte{tagEnd}, sw.count)); err != nil {
		return fmt.Errorf("write snapshot trailer: %w", err)
	}
	if _, err := sw.w.Write(sw.sum.Sum(nil)); err != nil {
		return fmt.Errorf("write snapshot trailer: %w", err)
	}
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("write snapshot trailer: %w", err)
	}
	return nil
}

// write writes p and adds it to the digest.
func (sw *Writer) write(p []byte) error {
	sw.sum.Write(p)
	_, err := sw.w.Write(p)
	return err
}

func checkRevisions(kv storage.KeyValue, rev int64) error {
	if kv.ModRevision <= 0 || kv.CreateRevision <= 0 || kv.CreateRevision > kv.ModRevision || kv.ModRevision > rev {
		return fmt.Errorf("snapshot key %q: created at %d, modified at %d, snapshot at %d: %w",
			kv.Key, kv.CreateRevision, kv.ModRevision, rev, ErrCorrupt)
	}
	return nil
}

// Reader reads a snapshot written by Writer, checking its order, its
// revisions, its key count and its digest: Next returns io.EOF only for a
// whole, intact file.
type Reader struct {
	r      *hashReader
	header Header
	last   string
	count  uint64
	done   bool
}

// NewReader reads and checks the header.
func NewReader(r io.Reader) (*Reader, error) {
	sr := &Reader{r: &hashReader{r: bufio.NewReaderSize(r, 256<<10), sum: sha256.New()}}
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(sr.r, m); err != nil || string(m) != magic {
		return nil, fmt.Errorf("not a leasehold snapshot (no %q header): %w", magic[:len(magic)-1], ErrCorrupt)
	}
	n, err := binary.ReadUvarint(sr.r)
	if err != nil || n > maxHeader {
		return nil, fmt.Errorf("snapshot header length: %w", ErrCorrupt)
	}
	hj := make([]byte, n)
	if _, err := io.ReadFull(sr.r, hj); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", ErrCorrupt)
	}
	if err := json.Unmarshal(hj, &sr.header); err != nil || sr.header.Revision <= 0 {
		return nil, fmt.Errorf("snapshot header %q: %w", hj, ErrCorrupt)
	}
	return sr, nil
}

// Header is the snapshot's header.
func (sr *Reader) Header() Header { return sr.header }

// Next returns the next key, or io.EOF after the last one once the trailer
// has checked out.
func (sr *Reader) Next() (storage.KeyValue, error) {
	if sr.done {
		return storage.KeyValue{}, io.EOF
	}
	tag, err := sr.r.ReadByte()
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("snapshot after %d keys: %w", sr.count, ErrCorrupt)
	}
	switch tag {
	case tagKey:
		kv, err := sr.readKey()
		if err != nil {
			return storage.KeyValue{}, fmt.Errorf("snapshot key %d: %w", sr.count+1, err)
		}
		return kv, nil
	case tagEnd:
		return storage.KeyValue{}, sr.readTrailer()
	default:
		return storage.KeyValue{}, fmt.Errorf("snapshot record tag %q after %d keys: %w", tag, sr.count, ErrCorrupt)
	}
}

func (sr *Reader) readKey() (storage.KeyValue, error) {
	key, err := sr.field()
	if err != nil {
		return storage.KeyValue{}, err
	}
	kv := storage.KeyValue{Key: string(key)}
	c, err1 := binary.ReadUvarint(sr.r)
	m, err2 := binary.ReadUvarint(sr.r)
	if err := errors.Join(err1, err2); err != nil {
		return storage.KeyValue{}, ErrCorrupt
	}
	kv.CreateRevision, kv.ModRevision = int64(c), int64(m)
	if kv.Value, err = sr.field(); err != nil {
		return storage.KeyValue{}, err
	}
	if sr.count > 0 && kv.Key <= sr.last {
		return storage.KeyValue{}, fmt.Errorf("key %q after %q: %w", kv.Key, sr.last, ErrCorrupt)
	}
	if err := checkRevisions(kv, sr.header.Revision); err != nil {
		return storage.KeyValue{}, err
	}
	sr.last = kv.Key
	sr.count++
	return kv, nil
}

// field reads a length-prefixed byte string.
func (sr *Reader) field() ([]byte, error) {
	n, err := binary.ReadUvarint(sr.r)
	if err != nil || n > maxField {
		return nil, ErrCorrupt
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(sr.r, b); err != nil {
		return nil, ErrCorrupt
	}
	return b, nil
}

func (sr *Reader) readTrailer() error {
	count, err := binary.ReadUvarint(sr.r)
	if err != nil || count != sr.count {
		return fmt.Errorf("snapshot trailer counts %d keys, read %d: %w", count, sr.count, ErrCorrupt)
	}
	// The digest covers every byte before it, which is what was read.
	want := sr.r.sum.Sum(nil)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(sr.r.r, got); err != nil || !bytes.Equal(got, want) {
		return fmt.Errorf("snapshot digest does not match its contents: %w", ErrCorrupt)
	}
	if _, err := sr.r.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("snapshot has data after its digest: %w", ErrCorrupt)
	}
	sr.done = true
	return io.EOF
}

// hashReader adds every byte it reads to the digest.
type hashReader struct {
	r   *bufio.Reader
	sum hash.Hash
	one [1]byte
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.sum.Write(p[:n])
	return n, err
}

func (h *hashReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.one[0] = b
		h.sum.Write(h.one[:])
	}
	return b, err
}
