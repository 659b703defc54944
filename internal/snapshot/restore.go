package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/storage/embedded"
)

// RestoreOptions adjusts a restore.
type RestoreOptions struct {
	// BumpRevision is added to the snapshot's revision to make the restored
	// store's revision (and its compacted one). Objects keep their
	// resourceVersions either way. Zero suits a snapshot taken with the
	// writers stopped (a migration). After a restore from an online backup,
	// the old store went on past the snapshot, and its clients may hold
	// resourceVersions from those lost writes: a bump larger than the writes
	// since the snapshot makes every such resourceVersion older than the
	// compacted revision, so those clients get 410 Expired and relist,
	// instead of seeing new writes reuse the numbers they hold (etcdutl's
	// --bump-revision with --mark-compacted, for the same reason).
	BumpRevision int64
}

func (o RestoreOptions) revision(h Header) (int64, error) {
	if o.BumpRevision < 0 {
		return 0, fmt.Errorf("negative revision bump %d", o.BumpRevision)
	}
	return h.Revision + o.BumpRevision, nil
}

// RestoreEmbedded writes the snapshot r into a new embedded store in dir
// (which must not exist, or be empty). It writes a sibling temporary
// directory and renames it to dir once complete, so dir never holds half a
// store. It returns the snapshot's header and key count.
func RestoreEmbedded(r io.Reader, dir string, opts RestoreOptions) (Header, uint64, error) {
	sr, err := NewReader(r)
	if err != nil {
		return Header{}, 0, err
	}
	h := sr.Header()
	rev, err := opts.revision(h)
	if err != nil {
		return h, 0, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return h, 0, fmt.Errorf("restore into %s: the directory is not empty (restore into a new one)", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return h, 0, fmt.Errorf("restore into %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".restoring-")
	if err != nil {
		return h, 0, fmt.Errorf("restore into %s: %w", dir, err)
	}
	n, err := loadEmbedded(sr, tmp, rev)
	if err == nil {
		// rename(2) replaces an empty directory.
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		return h, n, errors.Join(fmt.Errorf("restore into %s: %w", dir, err), os.RemoveAll(tmp))
	}
	return h, n, syncDir(filepath.Dir(dir))
}

func loadEmbedded(sr *Reader, dir string, rev int64) (uint64, error) {
	l, err := embedded.NewLoader(dir)
	if err != nil {
		return 0, err
	}
	var n uint64
	for {
		kv, err := sr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil {
			err = l.Add(kv)
		}
		if err != nil {
			return n, errors.Join(err, l.Abort())
		}
		n++
	}
	return n, l.Finish(rev)
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
