package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/internal/storage"
)

// On-disk layout. Every pebble key starts with a one-byte namespace:
//
//	'v' + key          -> current value: modRev(8) createRev(8) value
//	'l' + rev(8, BE)   -> log record of the write that produced rev
//	'm' + name         -> meta (metaRevision, metaCompacted): int64 (8, BE)
//
// Big-endian revisions make the log sort in revision order, so replay and
// compaction are range scans and one DeleteRange.
const (
	nsValue = 'v'
	nsLog   = 'l'
	nsMeta  = 'm'
)

var (
	// metaRevision is written in every commit batch: it is the revision of the
	// newest durable write even after compaction emptied the log.
	metaRevision = []byte{nsMeta, 'r', 'e', 'v'}
	// metaCompacted is the revision of the last Compact.
	metaCompacted = []byte{nsMeta, 'c', 'm', 'p'}
	// metaSwept is the revision up to which compaction has deleted the log
	// records it no longer needs; at most metaCompacted.
	metaSwept = []byte{nsMeta, 's', 'w', 'p'}
)

var errCorrupt = errors.New("corrupt record")

func valueKey(key string) []byte {
	b := make([]byte, 0, 1+len(key))
	b = append(b, nsValue)
	return append(b, key...)
}

// valueRange returns the pebble bounds [lower, upper) of the value keys
// under prefix; upper is nil when no key sorts after them.
func valueRange(prefix string) (lower, upper []byte) {
	lower = valueKey(prefix)
	upper = make([]byte, len(lower))
	copy(upper, lower)
	for i := len(upper) - 1; i >= 0; i-- {
		if upper[i] != 0xff {
			upper[i]++
			return lower, upper[:i+1]
		}
	}
	return lower, nil
}

func logKey(rev int64) []byte {
	var b [9]byte
	b[0] = nsLog
	binary.BigEndian.PutUint64(b[1:], uint64(rev))
	return b[:]
}

func decodeLogKey(k []byte) (int64, error) {
	if len(k) != 9 || k[0] != nsLog {
		return 0, fmt.Errorf("log key %x: %w", k, errCorrupt)
	}
	return int64(binary.BigEndian.Uint64(k[1:])), nil
}

func encodeInt64(v int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return b[:]
}

func decodeInt64(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("int64 of %d bytes: %w", len(b), errCorrupt)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func encodeValue(modRev, createRev int64, value []byte) []byte {
	b := make([]byte, 16+len(value))
	binary.BigEndian.PutUint64(b, uint64(modRev))
	binary.BigEndian.PutUint64(b[8:], uint64(createRev))
	copy(b[16:], value)
	return b
}

// decodeValue copies the value out of b, which pebble owns only until the
// iterator moves or the closer is called.
func decodeValue(key string, b []byte) (storage.KeyValue, error) {
	if len(b) < 16 {
		return storage.KeyValue{}, fmt.Errorf("value of %q: %w", key, errCorrupt)
	}
	return storage.KeyValue{
		Key:            key,
		ModRevision:    int64(binary.BigEndian.Uint64(b)),
		CreateRevision: int64(binary.BigEndian.Uint64(b[8:])),
		Value:          append([]byte{}, b[16:]...),
	}, nil
}

// logRecord is one write as the event log keeps it: the write itself and the
// revision it replaced. The value it replaced is not repeated: it is the
// value of the record at prevModRev, which compaction keeps for as long as a
// record after the compacted revision names it (see compact.go). Records
// written before that rule carried the previous value too; they still decode.
type logRecord struct {
	typ       storage.EventType
	key       string
	value     []byte // nil for a delete
	createRev int64
	// prevModRev is the ModRevision the key had before this write, 0 if the
	// key did not exist (a create).
	prevModRev int64
	// prevValue is the value at prevModRev. encode never writes it: it is
	// filled from memory by the committer, from the record at prevModRev by
	// withPrevValue, or from an older record that still carried it.
	prevValue []byte
}

func (r *logRecord) encode() []byte {
	n := 1 + 4*binary.MaxVarintLen64 + len(r.key) + len(r.value)
	b := make([]byte, 0, n)
	b = append(b, byte(r.typ))
	b = binary.AppendUvarint(b, uint64(r.createRev))
	b = binary.AppendUvarint(b, uint64(r.prevModRev))
	b = binary.AppendUvarint(b, uint64(len(r.key)))
	b = append(b, r.key...)
	if r.typ == storage.EventPut {
		b = binary.AppendUvarint(b, uint64(len(r.value)))
		b = append(b, r.value...)
	}
	return b
}

// decodeLogRecord copies everything out of b.
func decodeLogRecord(b []byte) (logRecord, error) {
	var r logRecord
	d := decoder{b: b}
	t := d.byte()
	r.typ = storage.EventType(t)
	r.createRev = int64(d.uvarint())
	r.prevModRev = int64(d.uvarint())
	r.key = string(d.bytes())
	if r.typ == storage.EventPut {
		r.value = append([]byte{}, d.bytes()...)
	}
	if r.prevModRev != 0 && len(d.b) > 0 {
		// An older record that still carries the previous value.
		r.prevValue = append([]byte{}, d.bytes()...)
	}
	if d.err != nil || len(d.b) != 0 || (r.typ != storage.EventPut && r.typ != storage.EventDelete) {
		return logRecord{}, fmt.Errorf("log record: %w", errCorrupt)
	}
	return r, nil
}

func (r *logRecord) event(rev int64) storage.Event {
	return storage.Event{
		Type:           r.typ,
		Key:            r.key,
		Value:          r.value,
		PrevValue:      r.prevValue,
		Revision:       rev,
		CreateRevision: r.createRev,
	}
}

// decodeLogLinks reads only what compaction needs from a log record: whether
// it is a delete and the revision it replaced.
func decodeLogLinks(b []byte) (typ storage.EventType, prevModRev int64, err error) {
	d := decoder{b: b}
	typ = storage.EventType(d.byte())
	d.uvarint() // createRev
	prevModRev = int64(d.uvarint())
	if d.err != nil || (typ != storage.EventPut && typ != storage.EventDelete) {
		return 0, 0, fmt.Errorf("log record: %w", errCorrupt)
	}
	return typ, prevModRev, nil
}

// decoder reads a log record, remembering the first error instead of
// checking after every field.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errCorrupt
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || uint64(len(d.b)) < n {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
