package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// BaselineHandler is the yardstick a renewal's server CPU is measured
// against (issue 25: at most 1.8 times what a trivial Go HTTP/2+TLS handler
// costs per request). It answers just enough of the Lease API for bench max
// to run against it unchanged, with the same clients, connections and
// request bytes as against leasehold serve, and does nothing a server must
// do for a renewal: every POST and PUT is answered with its own body (201
// and 200), so the response is as long as the request and the client
// decodes a Lease as it would from a server; a GET of a lease collection is
// an empty LeaseList, so the run creates its leases; everything else is a
// 404. Echoing rather than a fixed body keeps both directions' bytes those
// of a real renewal (which answers with the lease it was sent, one
// resourceVersion and managedFields time apart).
type BaselineHandler struct {
	// emptyLists holds an empty LeaseList per media type the client may
	// ask for, encoded once: encoding is work the yardstick leaves out.
	emptyLists map[string][]byte
	buffers    sync.Pool // *bytes.Buffer for request bodies
}

// NewBaselineHandler returns a BaselineHandler; it is safe for concurrent
// use.
func NewBaselineHandler() (*BaselineHandler, error) {
	list := &coordinationv1.LeaseList{Items: []coordinationv1.Lease{}}
	list.APIVersion, list.Kind = coordinationv1.SchemeGroupVersion.String(), "LeaseList"
	h := &BaselineHandler{emptyLists: map[string][]byte{}}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			return nil, fmt.Errorf("client-go's scheme has no serializer for %s", mediaType)
		}
		var buf bytes.Buffer
		if err := info.Serializer.Encode(list, &buf); err != nil {
			return nil, fmt.Errorf("encoding an empty LeaseList as %s: %w", mediaType, err)
		}
		h.emptyLists[mediaType] = buf.Bytes()
	}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *BaselineHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodPut:
		h.echo(w, r)
	case http.MethodGet:
		if !strings.HasSuffix(r.URL.Path, "/leases") {
			http.NotFound(w, r)
			return
		}
		mediaType := runtime.ContentTypeJSON
		if strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
			mediaType = runtime.ContentTypeProtobuf
		}
		w.Header()["Content-Type"] = []string{mediaType}
		_, _ = w.Write(h.emptyLists[mediaType])
	default:
		http.NotFound(w, r)
	}
}

// echo answers a write with its own body in its own content type.
func (h *BaselineHandler) echo(w http.ResponseWriter, r *http.Request) {
	buf, _ := h.buffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = &bytes.Buffer{}
	}
	defer h.buffers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, 3<<20)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header()["Content-Type"] = []string{r.Header.Get("Content-Type")}
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	_, _ = w.Write(buf.Bytes())
}
