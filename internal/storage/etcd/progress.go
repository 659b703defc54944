package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// progressSupport remembers whether the cluster's progress notifications
// can be trusted, decided on first use (watch.go asks before every watch
// opened WithProgressNotify, RequestProgress before every request).
//
// etcd sends progress on a watch (periodically with WithProgressNotify,
// and on request with RequestProgress) with the revision up to which the
// watch has delivered everything. Before 3.4.25 and 3.5.8 a requested
// notification could be sent to a watch that had not yet caught up
// (etcd-io/etcd#15220), claiming a revision whose events were still to
// come: a cache trusting it would serve a "consistent" read without them.
// kube-apiserver checks the same versions before it reads from its cache
// (KEP-2340); here a cluster with any older member gets no progress at
// all, and its watches behave as before.
type progressSupport struct {
	mu      sync.Mutex
	decided bool
	ok      bool
}

// statusTimeout bounds asking the members for their versions.
const statusTimeout = 5 * time.Second

// progressOK reports whether every member that answers runs an etcd whose
// progress notifications are safe. It asks once; if no member answers it
// says no and asks again next time.
func (s *Store) progressOK(ctx context.Context) bool {
	s.progress.mu.Lock()
	defer s.progress.mu.Unlock()
	if s.progress.decided {
		return s.progress.ok
	}
	cctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var versions []string
	for _, ep := range s.client.Endpoints() {
		if st, err := s.client.Status(cctx, ep); err == nil {
			versions = append(versions, st.Version)
		}
	}
	if len(versions) == 0 {
		return false
	}
	ok := true
	for _, v := range versions {
		ok = ok && progressSafe(v)
	}
	s.progress.decided, s.progress.ok = true, ok
	s.log.Info("etcd progress notifications", "enabled", ok, "memberVersions", versions)
	return ok
}

// progressSafe reports whether etcd version v ("3.5.9") has the fix for
// etcd-io/etcd#15220: 3.4.25+, 3.5.8+, 3.6 and later.
func progressSafe(v string) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 3 {
		return false
	}
	var n [3]int
	for i, p := range parts {
		// "3.6.0-rc.1": the patch level's digits only.
		p, _, _ = strings.Cut(p, "-")
		x, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		n[i] = x
	}
	switch {
	case n[0] != 3:
		return n[0] > 3
	case n[1] == 4:
		return n[2] >= 25
	case n[1] == 5:
		return n[2] >= 8
	}
	return n[1] > 5
}

// errProgressUnsupported answers RequestProgress on a cluster whose
// progress notifications are not trusted (see progressSupport).
var errProgressUnsupported = fmt.Errorf("etcd: progress notifications need etcd 3.4.25, 3.5.8 or later: %w", errors.ErrUnsupported)

// RequestProgress implements storage.ProgressRequester with etcd's
// RequestProgress on the watch stream the driver's watches share: they
// are all opened with WithRequireLeader, whose metadata names the stream.
func (s *Store) RequestProgress(ctx context.Context) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if !s.progressOK(ctx) {
		return errProgressUnsupported
	}
	if err := s.client.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
		return wrap("etcd: request watch progress", err)
	}
	return nil
}

var _ storage.ProgressRequester = (*Store)(nil)
