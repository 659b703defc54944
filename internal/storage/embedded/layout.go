package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// On-disk layout. Every pebble key starts with a one-byte namespace:
//
//	'v' + key          -> current state: modRev(8) createRev(8)
//	'l' + rev(8, BE)   -> log record of the write that produced rev
//	'm' + name         -> meta (metaRevision, metaCompacted): int64 (8, BE)
//	'm' 't' + nanos(8) -> a compactor sample: the revision (8, BE) at that time
//
// Big-endian revisions make the log sort in revision order, so replay and
// compaction are range scans and one DeleteRange.
//
// A value is stored once, in the log record of the write that produced it;
// a key's current state points at that record by modRev. Compaction keeps
// the record of every live key's newest write (see Compact), so the pointer
// never dangles. Writing values once halves what a write costs on disk: in
// the WAL, in memtable flushes and in every compaction that rewrites the
// current states, which change on every heartbeat. Stores written before
// this layout kept a copy of the value after the two revisions; such a
// state still decodes, with its copy, until the key's next write.
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
	// metaSamples prefixes the compactor's (time, revision) samples.
	metaSamples = []byte{nsMeta, 't'}
)

var errCorrupt = errors.New("corrupt record")

func valueKey(key string) []byte {
	return appendValueKey(make([]byte, 0, 1+len(key)), key)
}

// appendValueKey appends key's current-state key to dst.
func appendValueKey(dst []byte, key string) []byte {
	return append(append(dst, nsValue), key...)
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

// logKeyLen is the length of every log key: the namespace byte and the
// revision's 8.
const logKeyLen = 9

func logKey(rev int64) []byte {
	var b [logKeyLen]byte
	b[0] = nsLog
	binary.BigEndian.PutUint64(b[1:], uint64(rev))
	return b[:]
}

func decodeLogKey(k []byte) (int64, error) {
	if len(k) != logKeyLen || k[0] != nsLog {
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

func encodeCurrent(modRev, createRev int64) []byte {
	var b [16]byte
	putCurrent(&b, modRev, createRev)
	return b[:]
}

// putCurrent encodes a current state into b.
func putCurrent(b *[16]byte, modRev, createRev int64) {
	binary.BigEndian.PutUint64(b[:8], uint64(modRev))
	binary.BigEndian.PutUint64(b[8:], uint64(createRev))
}

// current is a key's decoded current state.
type current struct {
	modRev, createRev int64
	// inline is the copy of the value that stores older than this layout
	// kept in the state; nil when the value is only in the log (or, for an
	// old state, empty: its record then holds the same empty value).
	inline []byte
}

// decodeCurrent copies what it keeps out of b, which pebble owns only until
// the iterator moves or the closer is called.
func decodeCurrent(key string, b []byte) (current, error) {
	if len(b) < 16 {
		return current{}, fmt.Errorf("current state of %q: %w", key, errCorrupt)
	}
	c := current{modRev: int64(binary.BigEndian.Uint64(b)), createRev: int64(binary.BigEndian.Uint64(b[8:]))}
	if len(b) > 16 {
		c.inline = append([]byte{}, b[16:]...)
	}
	return c, nil
}

// currentValue returns key's current KeyValue, reading its value from the
// log in r (a snapshot, or the db where nothing can compact the record away)
// unless c still carries it.
func currentValue(r pebble.Reader, key string, c current) (storage.KeyValue, error) {
	kv := storage.KeyValue{Key: key, ModRevision: c.modRev, CreateRevision: c.createRev, Value: c.inline}
	if kv.Value != nil {
		return kv, nil
	}
	v, err := loggedValue(r, key, c.modRev)
	if err != nil {
		return storage.KeyValue{}, err
	}
	kv.Value = v
	return kv, nil
}

// loggedValue reads the value that key's write at rev produced from its log
// record in r. Callers only ask for records that compaction keeps, so a
// missing one, or one of another key or of a delete, means the store is
// corrupt.
func loggedValue(r pebble.Reader, key string, rev int64) ([]byte, error) {
	v, closer, err := r.Get(logKey(rev))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, missingRecord(key, rev)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read log revision %d: %w", key, rev, err)
	}
	value, err := recordValue(key, rev, v)
	if closeErr := closer.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("%s: read log revision %d: %w", key, rev, closeErr)
	}
	return value, err
}

// missingRecord is the corruption of a log record that a key's state or a
// later record names being gone.
func missingRecord(key string, rev int64) error {
	return fmt.Errorf("%s: revision %d is missing from the log: %w", key, rev, errCorrupt)
}

// recordValue copies the value out of b, the log record at rev, which must
// be a write of key.
func recordValue(key string, rev int64, b []byte) ([]byte, error) {
	rec, err := decodeLogRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: log revision %d: %w", key, rev, err)
	}
	if rec.key != key || rec.value == nil {
		return nil, fmt.Errorf("%s: log revision %d holds %q (%v): %w", key, rev, rec.key, rec.typ, errCorrupt)
	}
	return rec.value, nil
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
	return r.appendTo(make([]byte, 0, 1+4*binary.MaxVarintLen64+len(r.key)+len(r.value)))
}

// appendTo appends r's encoding to b: the committer encodes into one buffer
// it reuses, since pebble copies what a batch is given.
func (r *logRecord) appendTo(b []byte) []byte {
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

// decodeLogKeyOf returns the key of the log record b without copying it: it
// is valid only as long as b.
func decodeLogKeyOf(b []byte) ([]byte, error) {
	d := decoder{b: b}
	d.byte()
	d.uvarint() // createRev
	d.uvarint() // prevModRev
	key := d.bytes()
	if d.err != nil {
		return nil, fmt.Errorf("log record: %w", errCorrupt)
	}
	return key, nil
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
