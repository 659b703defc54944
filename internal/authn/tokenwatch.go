package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/request"
)

// DefaultTokenFilePollInterval is how often a token file is checked for
// changes: an added or revoked token takes effect within about this long.
const DefaultTokenFilePollInterval = time.Second

// racyWindow is how close to a read a file's modification time must be for
// the file to be read again even though its stat looks unchanged: file
// systems stamp mtime with a coarse clock (a kernel tick, or whole seconds),
// so a second write of the same size right after the first can keep the
// stamp we saw (git's "racily clean" index entries are the same problem).
const racyWindow = 2 * time.Second

// TokenFile authenticates static bearer tokens from a --token-auth-file,
// and, unlike kube-apiserver, re-reads the file when it changes so that
// tokens can be added and revoked without a restart.
//
// Run polls the file's stat (inode, size, modification time) every poll
// interval; on a change it reads and parses the file and swaps the whole
// token set at once. A file that has become invalid (or unreadable, or
// removed) keeps the last good set in force and logs a warning naming the
// line; tokens are never logged. Replace the file atomically (write a new
// file, then rename it over the old one, as most editors do): a file
// rewritten in place can be caught half-written, and then holds fewer
// tokens until the next poll reads it whole.
type TokenFile struct {
	path     string
	log      *slog.Logger
	interval time.Duration
	tokens   atomic.Pointer[tokenSet]

	// Owned by the goroutine running Run (and the constructor before it).
	seen       os.FileInfo       // stat of the last read
	readAt     time.Time         // when it was read
	sum        [sha256.Size]byte // content hash of the last read
	statFailed bool              // a failure to stat has been logged
}

// NewTokenFile loads path and returns its authenticator. A file that cannot
// be read or parsed is an error with Kubernetes' message, as at
// kube-apiserver's start. interval <= 0 means DefaultTokenFilePollInterval.
func NewTokenFile(path string, log *slog.Logger, interval time.Duration) (*TokenFile, error) {
	if interval <= 0 {
		interval = DefaultTokenFilePollInterval
	}
	t := &TokenFile{path: path, log: log, interval: interval}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	set, err := t.parse(data)
	if err != nil {
		return nil, err
	}
	t.tokens.Store(&set)
	t.seen, t.readAt, t.sum = info, time.Now(), sha256.Sum256(data)
	return t, nil
}

// AuthenticateToken implements TokenAuthenticator.
func (t *TokenFile) AuthenticateToken(token string) (request.User, bool, error) {
	u, ok := (*t.tokens.Load()).lookup(token)
	return u, ok, nil
}

// Run re-reads the file whenever it changes, until ctx ends.
func (t *TokenFile) Run(ctx context.Context) error {
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			t.poll()
		}
	}
}

// poll reloads the file if its stat changed since the last read (or the last
// read was too close to the file's modification to trust the stat).
func (t *TokenFile) poll() {
	info, err := os.Stat(t.path)
	if err != nil {
		if !t.statFailed {
			t.log.Warn("token file cannot be read; the tokens last loaded stay in force", "path", t.path, "err", err)
			t.statFailed = true
		}
		return
	}
	t.statFailed = false
	if sameStamp(t.seen, info) && t.readAt.Sub(info.ModTime()) >= racyWindow {
		return
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		t.log.Warn("token file cannot be read; the tokens last loaded stay in force", "path", t.path, "err", err)
		return
	}
	// A file being rewritten in place may have changed while it was read:
	// leave it for the next poll rather than apply a half-written set.
	if after, err := os.Stat(t.path); err != nil || !sameStamp(info, after) {
		return
	}
	sum := sha256.Sum256(data)
	t.seen, t.readAt = info, time.Now()
	if sum == t.sum {
		return // touched, or rewritten with the same content
	}
	t.sum = sum
	set, err := t.parse(data)
	if err != nil {
		line := 0
		var tfe *TokenFileError
		if errors.As(err, &tfe) {
			line = tfe.Line
		}
		t.log.Warn("token file is invalid; the tokens last loaded stay in force", "path", t.path, "line", line, "err", err)
		return
	}
	t.tokens.Store(&set)
	t.log.Info("token file reloaded", "path", t.path, "tokens", len(set))
}

// parse parses data and logs the records it skipped or overrode.
func (t *TokenFile) parse(data []byte) (tokenSet, error) {
	set, warnings, err := parseTokenFile(t.path, bytes.NewReader(data))
	for _, w := range warnings {
		t.log.Warn(w.Message, "path", t.path, "line", w.Line)
	}
	if err != nil {
		return nil, err
	}
	return set, nil
}

// sameStamp reports whether b looks like the same file, unmodified, as a.
func sameStamp(a, b os.FileInfo) bool {
	return a != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
