package embedded

import (
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
	v, err := loggedValue(r, rec.key, rec.prevModRev)
	if err != nil {
		return fmt.Errorf("previous value: %w", err)
	}
	rec.prevValue = v
	return nil
}
