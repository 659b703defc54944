package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes path through write: into a temporary file beside it
// (mode 0600: a snapshot holds every object), synced, and renamed to path
// only when write succeeds, so path is never a partial snapshot.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".saving-")
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("save %s: %w", path, err), removeIfExists(tmp))
	}
	return syncDir(filepath.Dir(path))
}
