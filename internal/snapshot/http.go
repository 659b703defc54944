package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/storage"
)

// Path is the server's snapshot endpoint: GET streams a snapshot of the
// store `leasehold serve` runs on, read while it serves. It is a
// non-resource path, as /metrics: the pebble files of a serving embedded
// store are locked by it, and a pebble snapshot inside the serving process
// is a consistent view that costs writers nothing (a checkpoint would copy
// or link whole files, with history, to disk first).
//
// Only system:masters may read it, whatever RBAC grants on non-resource
// URLs: a snapshot is the whole store, every object of every namespace,
// which is what direct access to etcd gives kube-apiserver's operators.
const Path = "/leasehold/snapshot"

// RevisionHeader carries the snapshot's revision in the response.
const RevisionHeader = "X-Leasehold-Snapshot-Revision"

// writeTimeout bounds each write to the client: a client that stops
// reading cannot hold the store's snapshot (and, for the embedded store,
// a reopen after a disk fault) for longer.
const writeTimeout = 30 * time.Second

// Handler serves Path from s.
func Handler(s storage.Interface, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s is not supported on %s; use GET", r.Method, Path))
			return
		}
		rec := request.RecordFrom(r.Context())
		if rec == nil || !rec.User.InGroup(request.SystemPrivilegedGroup) {
			name := ""
			if rec != nil {
				name = rec.User.Name
			}
			writeStatus(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(
				"forbidden: User %q cannot get path %q: only members of %s may read a snapshot of the whole store",
				name, Path, request.SystemPrivilegedGroup))
			return
		}
		src, err := Open(r.Context(), s, Prefix)
		if err != nil {
			writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "cannot read a snapshot of the store: "+err.Error())
			return
		}
		defer src.Close()
		h := Header{Revision: src.Revision(), Prefix: Prefix, Source: sourceName(s), Created: time.Now().UTC()}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set(RevisionHeader, strconv.FormatInt(h.Revision, 10))
		start := time.Now()
		n, err := Copy(r.Context(), src, deadlineWriter{w: w, rc: http.NewResponseController(w)}, h)
		if err != nil {
			// The response has begun: the client sees it end without the
			// trailer, which its reader refuses.
			log.Warn("snapshot stream failed", "revision", h.Revision, "keys", n, "err", err)
			return
		}
		log.Info("snapshot sent", "user", rec.User.Name, "revision", h.Revision, "keys", n, "duration", time.Since(start).String())
	})
}

// deadlineWriter gives each write writeTimeout to reach the client.
type deadlineWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := d.rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return d.w.Write(p)
}

// writeStatus answers with a Kubernetes Status, which client-go turns into
// its error.
func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code,
	})
}

// Fetch downloads a snapshot from the server cfg points at into w,
// checking it as it arrives: it returns nil only once the whole snapshot,
// digest included, was written to w.
func Fetch(ctx context.Context, cfg *rest.Config, w io.Writer) (Header, uint64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Header{}, 0, fmt.Errorf("snapshot client: %w", err)
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath(Path).Stream(ctx)
	if err != nil {
		return Header{}, 0, fmt.Errorf("GET %s: %w", Path, err)
	}
	defer body.Close()
	return Verify(io.TeeReader(body, w))
}

// Verify reads a whole snapshot from r and returns its header and key count,
// or the first reason it is not intact.
func Verify(r io.Reader) (Header, uint64, error) {
	sr, err := NewReader(r)
	if err != nil {
		return Header{}, 0, err
	}
	var n uint64
	for {
		_, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return sr.Header(), n, nil
		}
		if err != nil {
			return sr.Header(), n, err
		}
		n++
	}
}
