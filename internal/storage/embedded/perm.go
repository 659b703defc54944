package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The store's files hold every object, secrets of clients included: only
// the server's user may read them, whatever the umask and whatever mode the
// directory had. The directory is made 0700 before pebble creates anything
// in it, so a file is never reachable by others in the moment between its
// creation (pebble creates with 0666 less the umask) and its chmod to 0600.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// makePrivate creates dir if needed and sets it to dirMode, and everything
// under it to dirMode or fileMode: a store created by an older version, or
// in a directory someone else made, becomes private too. Open calls it
// before opening pebble and again after, for the LOCK file pebble creates
// outside vfs.FS.Create.
func makePrivate(dir string) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create store directory: %w", err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile (pebble's obsolete files)
		}
		if err != nil {
			return err
		}
		mode := fileMode
		if d.IsDir() {
			mode = dirMode
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if err := os.Chmod(path, mode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("make the store's files private: %w", err)
	}
	return nil
}

// privateFS is pebble's file system with the files and directories it
// creates set to fileMode and dirMode.
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	if f, err = privateFile(name, f, err); err == nil && yieldsOnWrite(category) {
		f = &yieldingFile{File: f}
	}
	return f, err
}

// Open opens name, yielding every yieldEvery reads when it is a table
// (background.go).
func (p privateFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.Open(name, opts...)
	if err == nil && yieldsOnRead(name) {
		f = &yieldingFile{File: f}
	}
	return f, err
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	return privateFile(newname, f, err)
}

// privateFile sets f, just created (or reused) as name, to fileMode; err
// is the creation's error, returned as is.
func privateFile(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(name, fileMode); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("chmod %s: %w", name, closeAfter(f, err))
	}
	return f, nil
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error {
	return p.FS.MkdirAll(dir, dirMode)
}

// Unwrap lets pebble see the file system underneath (vfs.Root).
func (p privateFS) Unwrap() vfs.FS { return p.FS }

func closeAfter(f vfs.File, err error) error {
	if cerr := f.Close(); cerr != nil {
		return fmt.Errorf("%w (and closing: %v)", err, cerr)
	}
	return err
}
