package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// etcd restores a cluster from an etcd snapshot database with its own tool
// (`etcdutl snapshot restore`, `etcdctl snapshot restore` before 3.5), once
// per member, which also writes each member's raft state. WriteEtcdDB
// writes such a database, so a Leasehold snapshot restores into etcd the
// way every etcd is restored, for any number of members, and keeps every
// key's revisions: writing the keys through an etcd client instead would
// give them new ones, and could not bring etcd's revision up to the
// snapshot's short of making that many writes.
//
// The database holds what etcd's storage layer (mvcc) reads when it
// starts: the "key" bucket, one entry per key keyed by its revision (8
// bytes main revision, '_', 8 bytes sub revision, big-endian) holding the
// mvccpb.KeyValue, and in the "meta" bucket the finished and scheduled
// compaction at the restored revision. etcd sets its current revision to
// at least the compacted one when it loads (mvcc's restore), so the
// cluster continues from the restored revision, and a watch or read from
// before it is ErrCompacted, which the server answers with 410 Expired.
// etcd's restore tool fills in the rest (membership, consistent index).
// As etcd's own snapshots, the file ends with the SHA-256 of the database.
var (
	etcdKeyBucket  = []byte("key")
	etcdMetaBucket = []byte("meta")
	etcdFinished   = []byte("finishedCompactRev")
	etcdScheduled  = []byte("scheduledCompactRev")
)

// etcdBatch is how many keys go into one bbolt transaction: a transaction
// keeps its dirty pages in memory until it commits.
const etcdBatch = 10_000

// WriteEtcdDB writes the snapshot r to path as an etcd snapshot database
// with etcdPrefix in place of every key's leading "/registry" (as serve's
// --etcd-prefix). path must not exist. It returns the header and key count.
func WriteEtcdDB(r io.Reader, path, etcdPrefix string, opts RestoreOptions) (Header, uint64, error) {
	sr, err := NewReader(r)
	if err != nil {
		return Header{}, 0, err
	}
	h := sr.Header()
	rev, err := opts.revision(h)
	if err != nil {
		return h, 0, err
	}
	if !strings.HasPrefix(etcdPrefix, "/") {
		return h, 0, fmt.Errorf("etcd prefix %q must start with /", etcdPrefix)
	}
	if _, err := os.Lstat(path); err == nil {
		return h, 0, fmt.Errorf("write etcd snapshot %s: the file exists", path)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".writing")
	_ = os.Remove(tmp) // a leftover of an interrupted run
	n, err := writeEtcdDB(sr, tmp, strings.TrimRight(etcdPrefix, "/"), rev)
	if err == nil {
		err = appendDigest(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return h, n, errors.Join(fmt.Errorf("write etcd snapshot %s: %w", path, err), removeIfExists(tmp))
	}
	return h, n, syncDir(filepath.Dir(path))
}

func writeEtcdDB(sr *Reader, path, prefix string, rev int64) (n uint64, err error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	// Synced once, by appendDigest: a crash leaves only the temporary file.
	db.NoSync = true
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{etcdKeyBucket, etcdMetaBucket} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(etcdMetaBucket)
		return errors.Join(meta.Put(etcdFinished, etcdRevision(rev, 0)), meta.Put(etcdScheduled, etcdRevision(rev, 0)))
	}); err != nil {
		return 0, err
	}
	// Keys one etcd transaction wrote share a main revision and take the
	// next sub revision.
	subs := make(map[int64]int64)
	for done := false; !done; {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(etcdKeyBucket)
			for i := 0; i < etcdBatch; i++ {
				kv, err := sr.Next()
				if errors.Is(err, io.EOF) {
					done = true
					return nil
				}
				if err != nil {
					return err
				}
				if !strings.HasPrefix(kv.Key, "/registry") {
					return fmt.Errorf("key %q is outside /registry", kv.Key)
				}
				v, err := proto.Marshal(&mvccpb.KeyValue{
					Key:            []byte(prefix + kv.Key[len("/registry"):]),
					CreateRevision: kv.CreateRevision,
					ModRevision:    kv.ModRevision,
					// Writes since creation, which the snapshot does not
					// know; at least 1 for a live key. Leasehold never
					// reads it.
					Version: 1,
					Value:   kv.Value,
				})
				if err != nil {
					return fmt.Errorf("encode %s: %w", kv.Key, err)
				}
				sub := subs[kv.ModRevision]
				subs[kv.ModRevision] = sub + 1
				if err := b.Put(etcdRevision(kv.ModRevision, sub), v); err != nil {
					return fmt.Errorf("write %s: %w", kv.Key, err)
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// etcdRevision encodes a revision as etcd's mvcc keys it.
func etcdRevision(main, sub int64) []byte {
	b := make([]byte, 17)
	binary.BigEndian.PutUint64(b, uint64(main))
	b[8] = '_'
	binary.BigEndian.PutUint64(b[9:], uint64(sub))
	return b
}

// appendDigest appends the SHA-256 of the file's contents, as etcd's
// snapshot save does and its restore checks, and syncs the file.
func appendDigest(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	if err == nil {
		_, err = f.Write(h.Sum(nil))
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
