package logbackend

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// BackupTimeFormat is the timestamp in a rotated file's name (UTC), as
// lumberjack (kube-apiserver's rotation) writes it.
const BackupTimeFormat = "2006-01-02T15-04-05.000"

// rotator is an io.Writer to a file that is renamed aside once the next
// write would take it past maxSize.
type rotator struct {
	path       string
	maxSize    int64
	maxBackups int
	maxAge     time.Duration
	compress   bool
	now        func() time.Time

	mu   sync.Mutex
	file *os.File
	size int64
	// rotated is signalled (without blocking) after each rotation, for the
	// housekeeping loop.
	rotated chan struct{}
}

func openRotator(path string, maxSize int64, maxBackups int, maxAge time.Duration, compress bool, now func() time.Time) (*rotator, error) {
	r := &rotator{path: path, maxSize: maxSize, maxBackups: maxBackups, maxAge: maxAge, compress: compress,
		now: now, rotated: make(chan struct{}, 1)}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600) // read: dropTornTail
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	size, err := dropTornTail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	r.file, r.size = f, size
	r.rotated <- struct{}{} // prune what earlier runs left
	return r, nil
}

// Write writes p (one whole line) with one write call, rotating first if p
// would take the file past its maximum size.
func (r *rotator) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.file.Write(p)
	r.size += int64(n)
	return n, err
}

// rotate renames the current file aside and starts a new one.
func (r *rotator) rotate() error {
	if err := r.file.Close(); err != nil {
		return fmt.Errorf("closing audit log: %w", err)
	}
	r.file = nil
	if err := os.Rename(r.path, r.backupName()); err != nil {
		return fmt.Errorf("rotating audit log: %w", err)
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	r.file, r.size = f, 0
	select {
	case r.rotated <- struct{}{}:
	default:
	}
	return nil
}

// backupName is a name for the current file's rotation that no earlier
// rotation took (two rotations within a millisecond get successive stamps).
func (r *rotator) backupName() string {
	dir, base := filepath.Split(r.path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext)
	for t := r.now().UTC(); ; t = t.Add(time.Millisecond) {
		name := filepath.Join(dir, prefix+"-"+t.Format(BackupTimeFormat)+ext)
		if !exists(name) && !exists(name+".gz") {
			return name
		}
	}
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// Close closes the current file.
func (r *rotator) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// Backup is one rotated audit log file.
type Backup struct {
	Path string
	// Time is when it was rotated, from its name.
	Time       time.Time
	Compressed bool
}

// Backups lists the rotated files of the log at path, oldest first. A
// file present both compressed and not is listed once, uncompressed: its
// compression did not finish.
func Backups(path string) ([]Backup, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing audit logs: %w", err)
	}
	seen := map[string]int{}
	var out []Backup
	for _, e := range entries {
		name := e.Name()
		compressed := strings.HasSuffix(name, ext+".gz")
		stem := strings.TrimSuffix(name, ".gz")
		if !e.Type().IsRegular() || !strings.HasPrefix(stem, prefix) || !strings.HasSuffix(stem, ext) {
			continue
		}
		t, err := time.Parse(BackupTimeFormat, strings.TrimSuffix(strings.TrimPrefix(stem, prefix), ext))
		if err != nil {
			continue
		}
		b := Backup{Path: filepath.Join(dir, name), Time: t, Compressed: compressed}
		if i, ok := seen[stem]; ok {
			if !compressed {
				out[i] = b
			}
			continue
		}
		seen[stem] = len(out)
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// housekeep removes rotated files beyond maxBackups or older than maxAge
// and compresses the rest if asked.
func (r *rotator) housekeep() error {
	backups, err := Backups(r.path)
	if err != nil {
		return err
	}
	var errs []error
	keep := backups[:0]
	var cutoff time.Time
	if r.maxAge > 0 {
		cutoff = r.now().Add(-r.maxAge)
	}
	for i, b := range backups {
		tooMany := r.maxBackups > 0 && len(backups)-i > r.maxBackups
		tooOld := b.Time.Before(cutoff)
		if tooMany || tooOld {
			errs = append(errs, removeBoth(b.Path))
			continue
		}
		keep = append(keep, b)
	}
	if r.compress {
		for _, b := range keep {
			if !b.Compressed {
				errs = append(errs, compressFile(b.Path))
			}
		}
	}
	return errors.Join(errs...)
}

// removeBoth removes a rotated file and its compressed (or uncompressed)
// twin.
func removeBoth(path string) error {
	stem := strings.TrimSuffix(path, ".gz")
	for _, p := range []string{stem, stem + ".gz"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing old audit log: %w", err)
		}
	}
	return nil
}

// compressFile gzips path to path.gz through a temporary file, then removes
// path.
func compressFile(path string) error {
	src, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("compressing audit log: %w", err)
	}
	defer src.Close()
	tmp := path + ".gz.tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("compressing audit log: %w", err)
	}
	zw := gzip.NewWriter(dst)
	_, err = io.Copy(zw, src)
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compressing audit log %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing compressed audit log: %w", err)
	}
	return nil
}

// dropTornTail cuts a line left unfinished at the end of the log, and
// returns the size that remains. A kill -9 in the middle of a write(2) can
// leave part of it on disk (Linux stops a write to a regular file between
// pages when the process gets a fatal signal); that line was never
// finished, so no request or batch counted it as logged, and appending to
// it would glue the next event onto its garbage.
func dropTornTail(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return 0, fmt.Errorf("reading the tail: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if end == size {
		return size, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("cutting a torn last line: %w", err)
	}
	return end, nil
}
