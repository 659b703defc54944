package apiserver

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/internal/request"
)

// DefaultRequestTimeout is kube-apiserver's --request-timeout.
const DefaultRequestTimeout = 60 * time.Second

// withRequestDeadline bounds a request that is not a watch as
// kube-apiserver's WithRequestDeadline does: it must be answered within
// Config.Timeout of its arrival, or within the client's ?timeout=
// when that is shorter (and positive). Every wait on the way (the store,
// the watch cache catching up) ends at the deadline, and the request is
// answered 504 Timeout (unavailable.go) instead of holding its client for
// as long as the store is gone. A watch is bounded by its timeoutSeconds
// instead. The caller calls the returned cancel when the request is done.
func (s *Server) withRequestDeadline(r *http.Request, rec *request.Record, verb string) (*http.Request, context.CancelFunc, error) {
	timeout := s.cfg.Timeout
	if verb == "watch" || timeout <= 0 {
		return r, func() {}, nil
	}
	// Most requests carry no query at all; parse it only when it may hold
	// a timeout.
	if strings.Contains(r.URL.RawQuery, "timeout=") {
		q, _ := url.ParseQuery(r.URL.RawQuery)
		if v := q.Get("timeout"); v != "" {
			asked, err := time.ParseDuration(v)
			if err != nil {
				return r, func() {}, apierrors.NewBadRequest("invalid timeout specified in the request URL - " + err.Error())
			}
			if asked > 0 && asked < timeout {
				timeout = asked
			}
		}
	}
	ctx, cancel := context.WithDeadline(r.Context(), rec.Received.Add(timeout))
	return r.WithContext(ctx), cancel, nil
}
