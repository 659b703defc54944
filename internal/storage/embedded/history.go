package embedded

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// withPrevValue fills rec.prevValue from the record at rec.prevModRev, read
// from r (the reader's snapshot). Compaction keeps that record while any
// record after the compacted revision names it, and readers only undo or
// replay records after it, so a missing one means the store is corrupt.
func withPrevValue(r pebble.Reader, rec *logRecord) error {
	if rec.prevModRev == 0 || rec.prevValue != nil {
		return nil
	}
	v, closer, err := r.Get(logKey(rec.prevModRev))
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("%s: previous revision %d is missing: %w", rec.key, rec.prevModRev, errCorrupt)
	}
	if err != nil {
		return fmt.Errorf("%s: read previous revision %d: %w", rec.key, rec.prevModRev, err)
	}
	prev, err := decodeLogRecord(v)
	closeErr := closer.Close()
	if err != nil {
		return fmt.Errorf("%s: previous revision %d: %w", rec.key, rec.prevModRev, err)
	}
	if closeErr != nil {
		return fmt.Errorf("%s: read previous revision %d: %w", rec.key, rec.prevModRev, closeErr)
	}
	if prev.key != rec.key || prev.value == nil {
		return fmt.Errorf("%s: previous revision %d holds %q (%v): %w", rec.key, rec.prevModRev, prev.key, prev.typ, errCorrupt)
	}
	rec.prevValue = prev.value
	return nil
}
