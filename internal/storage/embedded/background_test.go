package embedded

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Flushes' and compactions' files and table reads yield; the WAL and the
// rest do not (background.go).
func TestOnlyBackgroundFilesYield(t *testing.T) {
	dir := t.TempDir()
	fs := privateFS{FS: vfs.Default}
	for _, c := range []struct {
		name     string
		category vfs.DiskWriteCategory
		yields   bool
	}{
		{"000001.sst", "pebble-compaction", true},
		{"000002.sst", "pebble-memtable-flush", true},
		{"000003.log", "pebble-wal", false},
		{"MANIFEST-000004", "pebble-manifest", false},
		{"000005.sst", vfs.WriteCategoryUnspecified, false},
	} {
		path := filepath.Join(dir, c.name)
		f, err := fs.Create(path, c.category)
		if err != nil {
			t.Fatal(err)
		}
		if _, yields := f.(*yieldingFile); yields != c.yields {
			t.Errorf("%s created for %s: yields %v, want %v", c.name, c.category, yields, c.yields)
		}
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := fs.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		wantRead := filepath.Ext(c.name) == ".sst"
		if _, yields := r.(*yieldingFile); yields != wantRead {
			t.Errorf("%s opened: yields %v, want %v", c.name, yields, wantRead)
		}
		buf := make([]byte, 1)
		if _, err := r.ReadAt(buf, 0); err != nil || buf[0] != 'x' {
			t.Errorf("%s: read %q, %v", c.name, buf, err)
		}
		_ = r.Close()
	}
}
