package apiserver

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/internal/request"
)

// Limits bound how much of the server requests may hold at once, so that
// one noisy client cannot starve the fleet's renewals. A request over a
// limit is answered at once with 429 TooManyRequests and Retry-After: 1, as
// kube-apiserver's max-in-flight filter answers; client-go waits and
// retries. Zero means unlimited.
//
// Loopback requests (in-process controllers) and members of system:masters
// are never limited, as kube-apiserver exempts system:masters. Watches are
// long-running: they do not count toward the in-flight limits, only toward
// PerUserWatches.
type Limits struct {
	// MaxRequestsInflight bounds concurrent non-mutating requests (get,
	// list, and non-resource reads): --max-requests-inflight, default 400.
	MaxRequestsInflight int
	// MaxMutatingRequestsInflight bounds concurrent writes:
	// --max-mutating-requests-inflight, default 200.
	MaxMutatingRequestsInflight int
	// PerUserRequests bounds one user's concurrent non-watch requests
	// (--max-requests-per-user, default DefaultPerUserRequests).
	PerUserRequests int
	// PerUserWatches bounds one user's open watches
	// (--max-watches-per-user, default DefaultPerUserWatches).
	PerUserWatches int
}

// Default per-user limits. A node agent holds at most a few requests and
// two or three watches at a time, kubectl one request or one watch, an
// elector one of each: the defaults leave each of them ample room, and only
// bite a single credential shared by a whole load generator or a runaway
// client, which is their purpose.
const (
	DefaultPerUserRequests = 100
	DefaultPerUserWatches  = 100
)

// limiter enforces Limits. The zero value limits nothing.
type limiter struct {
	readOnly, mutating chan struct{} // nil: unlimited
	perUserRequests    int
	perUserWatches     int

	mu sync.Mutex
	// users counts each user's requests and watches in flight; an entry
	// goes when both reach zero, so the map holds only active users.
	users map[string]*userLoad
}

type userLoad struct{ requests, watches int }

func newLimiter(l Limits) *limiter {
	lim := &limiter{perUserRequests: l.PerUserRequests, perUserWatches: l.PerUserWatches, users: map[string]*userLoad{}}
	if l.MaxRequestsInflight > 0 {
		lim.readOnly = make(chan struct{}, l.MaxRequestsInflight)
	}
	if l.MaxMutatingRequestsInflight > 0 {
		lim.mutating = make(chan struct{}, l.MaxMutatingRequestsInflight)
	}
	return lim
}

// tooManyRequests is kube-apiserver's answer when a limit is reached.
func tooManyRequests() error {
	return apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
}

// limit is the pipeline's third stage, between authentication (it needs
// the user) and authorization (a refused request should cost little). It
// returns the function that gives the request's share back when it ends,
// or answers 429 and returns ok=false.
func (s *Server) limit(w http.ResponseWriter, r *http.Request, rec *request.Record) (release func(), ok bool) {
	if _, loop := loopbackUser(r.Context()); loop || rec.User.InGroup(request.SystemPrivilegedGroup) {
		return noRelease, true
	}
	if release, ok = s.limits.acquire(rec); !ok {
		// writeError sends Retry-After from the Status's retryAfterSeconds.
		s.writeError(w, r, tooManyRequests())
	}
	return release, ok
}

func noRelease() {}

// acquire takes the request's share of the in-flight and per-user limits.
func (l *limiter) acquire(rec *request.Record) (func(), bool) {
	watch := rec.Verb == "watch"
	var sem chan struct{}
	switch {
	case watch:
	case rec.Verb == "get" || rec.Verb == "list" || rec.Verb == "head":
		sem = l.readOnly
	default:
		sem = l.mutating
	}
	if sem != nil {
		select {
		case sem <- struct{}{}:
		default:
			return nil, false
		}
	}
	if l.perUserRequests <= 0 && l.perUserWatches <= 0 {
		if sem == nil {
			return noRelease, true
		}
		return func() { <-sem }, true
	}
	name := rec.User.Name
	if !l.addUser(name, watch) {
		if sem != nil {
			<-sem
		}
		return nil, false
	}
	return func() {
		l.removeUser(name, watch)
		if sem != nil {
			<-sem
		}
	}, true
}

// addUser counts one more request (or watch) of user, unless that would
// pass the per-user limit.
func (l *limiter) addUser(user string, watch bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.users[user]
	if u == nil {
		u = &userLoad{}
		l.users[user] = u
	}
	switch {
	case watch && l.perUserWatches > 0 && u.watches >= l.perUserWatches,
		!watch && l.perUserRequests > 0 && u.requests >= l.perUserRequests:
		l.dropIdle(user, u)
		return false
	case watch:
		u.watches++
	default:
		u.requests++
	}
	return true
}

func (l *limiter) removeUser(user string, watch bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.users[user]
	if watch {
		u.watches--
	} else {
		u.requests--
	}
	l.dropIdle(user, u)
}

func (l *limiter) dropIdle(user string, u *userLoad) {
	if u.requests == 0 && u.watches == 0 {
		delete(l.users, user)
	}
}

// DefaultRequestTimeout is kube-apiserver's --request-timeout.
const DefaultRequestTimeout = 60 * time.Second

// requestDeadline is the deadline of a resource request that is not a
// watch, as kube-apiserver's WithRequestDeadline sets it: it must be
// answered within Config.Timeout of its arrival, or within the client's
// ?timeout= when that is shorter (and positive). Every wait on the way (the
// store, the watch cache catching up) ends at the deadline, and the request
// is answered 504 Timeout (unavailable.go) instead of holding its client for
// as long as the store is gone. A watch is bounded by its timeoutSeconds
// instead, and has none (ok false), as has every request when Config.Timeout
// is not positive. An invalid ?timeout= is returned as its 400, with the
// default deadline.
func (s *Server) requestDeadline(r *http.Request, rec *request.Record, verb string) (deadline time.Time, ok bool, err error) {
	timeout := s.cfg.Timeout
	if verb == "watch" || timeout <= 0 {
		return time.Time{}, false, nil
	}
	// Most requests carry no query at all; parse it only when it may hold
	// a timeout.
	if strings.Contains(r.URL.RawQuery, "timeout=") {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		if v := q.Get("timeout"); v != "" {
			asked, perr := time.ParseDuration(v)
			if perr != nil {
				err = apierrors.NewBadRequest("invalid timeout specified in the request URL - " + perr.Error())
			} else if asked > 0 && asked < timeout {
				timeout = asked
			}
		}
	}
	return rec.Received.Add(timeout), true, err
}
