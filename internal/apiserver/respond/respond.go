// Package respond is the HTTP plumbing the resource API (internal/apiserver)
// and discovery (internal/discovery) share: content negotiation of the
// Accept header as kube-apiserver does it, encoding responses with pooled
// buffers, and Kubernetes' Status bodies for errors. It knows nothing of
// verbs or resources: what a negotiated clause's g/v/as parameters turn a
// response into (a Table, object metadata, an aggregated discovery
// document) is its caller's business.
//
// Invariants: a Negotiator and a Writer are safe for concurrent use and
// immutable but for their caches and pools; every error response is a
// metav1.Status with Kubernetes' code, reason and message.
package respond

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// Negotiator picks response serializers for Accept headers among a codec
// factory's supported media types.
type Negotiator struct {
	supported []runtime.SerializerInfo
	// accepts memoizes parsed headers: clients send the same few Accept
	// headers on every request (a renewal's is client-go's protobuf one).
	accepts acceptCache
}

// NewNegotiator negotiates among supported, the first of which (JSON in
// apimachinery's codec factories) answers a request without Accept.
func NewNegotiator(supported []runtime.SerializerInfo) *Negotiator {
	return &Negotiator{supported: supported, accepts: acceptCache{m: map[string]*parsedAccept{}}}
}

// Negotiate picks the serializer and the clause that chose it for an Accept
// header the way kube-apiserver does: an empty header gets the first
// supported type (JSON) with an empty clause; otherwise the first clause, in
// preference order (ParseAccept), that names a supported media type and
// that fit accepts wins. fit judges the clause's parameters (g, v, as,
// pretty, ...) for what the endpoint can produce. A media type whose most
// specific matching clause has q=0 is refused even if a wildcard would
// allow it. ok=false means 406 Not Acceptable.
func (n *Negotiator) Negotiate(header string, fit func(Clause, runtime.SerializerInfo) bool) (Clause, runtime.SerializerInfo, bool) {
	if strings.TrimSpace(header) == "" {
		return Clause{}, n.supported[0], true
	}
	p := n.accepts.get(header, n.supported)
	for _, c := range p.clauses {
		if c.Q <= 0 {
			continue
		}
		for i, info := range n.supported {
			if p.refused[i] || !c.Matches(info) {
				continue
			}
			if fit(c, info) {
				return c, info, true
			}
		}
	}
	return Clause{}, runtime.SerializerInfo{}, false
}

// Supported is the serializers negotiated among, in preference order.
func (n *Negotiator) Supported() []runtime.SerializerInfo { return n.supported }

// MediaTypes lists the supported media types, as 406 and 415 messages do.
func (n *Negotiator) MediaTypes() []string {
	out := make([]string, 0, len(n.supported))
	for _, info := range n.supported {
		out = append(out, info.MediaType)
	}
	return out
}

// SerializerFor finds the serializer of an exact media type (a request's
// Content-Type).
func (n *Negotiator) SerializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	for _, info := range n.supported {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

// Clause is one media range of an Accept header with its parameters (the
// q-value removed).
type Clause struct {
	Type, Subtype string
	Q             float64
	Params        map[string]string
}

// Matches reports whether the clause's media range covers the serializer.
func (c Clause) Matches(info runtime.SerializerInfo) bool {
	switch c.specificity() {
	case 0:
		return true
	case 1:
		return c.Type == info.MediaTypeType
	}
	return c.Type == info.MediaTypeType && c.Subtype == info.MediaTypeSubType
}

// specificity ranks how precisely the clause names a media type: 2 for
// type/subtype, 1 for type/*, 0 for */*.
func (c Clause) specificity() int {
	switch {
	case c.Type == "*":
		return 0
	case c.Subtype == "*":
		return 1
	}
	return 2
}

// parsedAccept is one Accept header's clauses and, for each supported
// serializer, whether its most specific matching clause carries q=0 ("not
// acceptable", RFC 9110 section 12.5.1). Shared: callers only read it.
type parsedAccept struct {
	clauses []Clause
	refused []bool
}

func parseFor(header string, supported []runtime.SerializerInfo) *parsedAccept {
	p := &parsedAccept{clauses: ParseAccept(header), refused: make([]bool, len(supported))}
	for i, info := range supported {
		best := -1
		for _, c := range p.clauses {
			if s := c.specificity(); c.Matches(info) && s > best {
				best = s
				p.refused[i] = c.Q <= 0
			}
		}
	}
	return p
}

// maxCachedAccepts bounds the memoized headers: a client sending endless
// distinct headers costs a parse each, never memory.
const maxCachedAccepts = 1024

// acceptCache is a bounded map under a read-write lock: read on every
// request, written a handful of times.
type acceptCache struct {
	mu sync.RWMutex
	m  map[string]*parsedAccept
}

func (c *acceptCache) get(header string, supported []runtime.SerializerInfo) *parsedAccept {
	c.mu.RLock()
	p, ok := c.m[header]
	c.mu.RUnlock()
	if ok {
		return p
	}
	p = parseFor(header, supported)
	c.mu.Lock()
	if len(c.m) < maxCachedAccepts {
		c.m[header] = p
	}
	c.mu.Unlock()
	return p
}

// Writer writes encoded responses, reusing its encoding buffers.
type Writer struct {
	bufs   encodeBuffers
	logger *slog.Logger
}

// NewWriter returns a Writer that logs encoding failures to logger.
func NewWriter(logger *slog.Logger) *Writer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Writer{logger: logger}
}

// Object writes obj with the negotiated serializer (pretty-printed when
// asked and possible). Some values JSON carries cannot be written as YAML
// (a control character echoed from a bad selector in a Status message):
// those are answered in JSON, which every client reads, rather than with a
// bare 500; json is the JSON serializer.
func (wr *Writer) Object(w http.ResponseWriter, code int, info, json runtime.SerializerInfo, pretty bool, obj runtime.Object) {
	enc := info.Serializer
	if pretty && info.PrettySerializer != nil {
		enc = info.PrettySerializer
	}
	buf := wr.bufs.get()
	defer wr.bufs.put(buf)
	mediaType := info.MediaType
	if err := buf.encode(enc, obj); err != nil {
		buf.out.Reset()
		if mediaType == json.MediaType || json.Serializer.Encode(obj, &buf.out) != nil {
			wr.logger.Error("encoding response", "err", err)
			w.Header().Set("Content-Type", runtime.ContentTypeJSON)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: encoding response failed","reason":"InternalError","code":500}`))
			return
		}
		mediaType = json.MediaType
	}
	write(w, code, mediaType, buf)
}

// Encoded encodes obj with enc and writes it with code and Content-Type
// contentType. The body is encoded before anything is written, so an
// encoding failure, returned, can still become another answer.
func (wr *Writer) Encoded(w http.ResponseWriter, code int, contentType string, enc runtime.Encoder, obj runtime.Object) error {
	buf := wr.bufs.get()
	defer wr.bufs.put(buf)
	if err := buf.encode(enc, obj); err != nil {
		return fmt.Errorf("encoding %T as %s: %w", obj, contentType, err)
	}
	write(w, code, contentType, buf)
	return nil
}

func write(w http.ResponseWriter, code int, contentType string, buf *encodeBuffer) {
	Body(w, code, contentType, buf.out.Bytes())
}

// Body writes an encoded body with code, its Content-Type and its
// Content-Length, as every encoded response is written. The response
// writer copies what it is given, so body's memory is free again when Body
// returns.
func Body(w http.ResponseWriter, code int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// maxPooledEncodeBuffer bounds the buffers kept for reuse: a large list
// response should not pin its memory for every later small answer.
const maxPooledEncodeBuffer = 64 << 10

// encodeBuffer is the scratch memory of one response encoding: the bytes
// written and the allocator the protobuf serializer marshals into. Reusing
// them takes two to three allocations (and their garbage) off every
// response, as kube-apiserver's pooled allocators do.
type encodeBuffer struct {
	out   bytes.Buffer
	alloc runtime.Allocator
}

// encodeBuffers hands out encodeBuffers; the zero value is ready.
type encodeBuffers struct{ pool sync.Pool }

func (p *encodeBuffers) get() *encodeBuffer {
	if b, ok := p.pool.Get().(*encodeBuffer); ok {
		b.out.Reset()
		return b
	}
	return &encodeBuffer{}
}

// put returns b once nothing refers to its bytes any more.
func (p *encodeBuffers) put(b *encodeBuffer) {
	if b.out.Cap() > maxPooledEncodeBuffer {
		return
	}
	p.pool.Put(b)
}

// encode writes obj into b.out, through the encoder's allocator path when
// it has one.
func (b *encodeBuffer) encode(enc runtime.Encoder, obj runtime.Object) error {
	if ea, ok := enc.(runtime.EncoderWithAllocator); ok {
		return ea.EncodeWithAllocator(obj, &b.out, &b.alloc)
	}
	return enc.Encode(obj, &b.out)
}
