package apiserver

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/envelope"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

// writeRequest is a create or update request, negotiated and decoded.
type writeRequest struct {
	n        negotiated
	opts     writeOptions
	obj      runtime.Object
	warnings []string
}

// readWriteRequest negotiates the response, parses the write options and
// decodes the body of a POST or PUT. replaces names the object a PUT
// replaces, or is nil: a protobuf body that renews it (changes its renewal
// time and nothing else) is then taken from the cache instead of decoded,
// and opts.SharesWith names the cached object (objects.Store.RenewalFromWire).
func (s *Server) readWriteRequest(r *http.Request, res *registry.Resource, replaces *requestInfo) (writeRequest, error) {
	var wr writeRequest
	var err error
	if wr.n, err = s.accept(r, false); err != nil {
		return wr, err
	}
	if wr.opts, err = parseWriteOptions(r); err != nil {
		return wr, err
	}
	si, err := s.requestSerializer(r.Header.Get("Content-Type"))
	if err != nil {
		return wr, err
	}
	buf := s.bodies.get()
	body, err := readBodyInto(r, *buf)
	if err != nil {
		return wr, err
	}
	if replaces != nil && replaces.subresource == "" && si.MediaType == runtime.ContentTypeProtobuf {
		wr.obj, wr.opts.SharesWith = s.renewalFromWire(res, replaces.namespace, replaces.name, body)
	}
	if wr.obj == nil {
		wr.obj, wr.warnings, err = s.decodeObject(res, si, body, wr.opts.fieldValidation)
	}
	s.bodies.put(buf, body)
	if err == nil {
		audit.RequestFrom(r.Context()).LogRequestObject(wr.obj)
	}
	return wr, err
}

// writeOptions are the query parameters every write takes: what the
// object layer takes, and how strictly the body is decoded.
type writeOptions struct {
	objects.WriteOptions
	fieldValidation fieldValidation
}

func parseWriteOptions(r *http.Request) (writeOptions, error) {
	q := r.URL.Query()
	o := writeOptions{WriteOptions: objects.WriteOptions{FieldManager: q.Get("fieldManager")}}
	for _, d := range q["dryRun"] {
		if d != "All" {
			return o, apierrors.NewBadRequest(fmt.Sprintf("unsupported dryRun value %q: only All is supported", d))
		}
		o.DryRun = true
	}
	var err error
	o.fieldValidation, err = parseFieldValidation(q)
	if o.FieldManager == "" {
		o.FieldManager = managerFromUserAgent(r.UserAgent())
	}
	if len(o.FieldManager) > 128 {
		return o, apierrors.NewBadRequest("fieldManager: Too long: may not be more than 128 bytes")
	}
	return o, err
}

// managerFromUserAgent derives the default field manager from the
// User-Agent, as kube-apiserver does ("kubectl/v1.33 (linux/amd64)" → "kubectl").
func managerFromUserAgent(ua string) string {
	if i := strings.IndexByte(ua, '/'); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

// readBody reads a request body of at most MaxRequestBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	return readBodyInto(r, nil)
}

// readBodyInto is readBody reading into buf's memory when the body fits
// (see byteBuffers).
func readBodyInto(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	body, err := readGrowing(io.LimitReader(r.Body, MaxRequestBodyBytes+1), int(r.ContentLength), buf)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && r.ContentLength > 0 {
			err = fmt.Errorf("body shorter than its Content-Length of %d bytes: %w", r.ContentLength, err)
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	return body, nil
}

// firstBodyBytes is the most memory a body gets before its bytes arrive.
// A Content-Length is only the client's word: 600 HTTP/2 streams that each
// announced 3 MiB and sent nothing held about 1 GB when the whole announced
// size was allocated up front. Past it, the buffer grows (doubling, as
// append does) only as bytes arrive, so memory follows what was sent.
const firstBodyBytes = maxPooledBytes

// readGrowing reads body to its end into buf's memory. announced (the
// Content-Length, or ≤ 0 when unknown) sizes the first buffer when buf is
// too small, and a body that ends short of it is io.ErrUnexpectedEOF: a renewal's few hundred bytes fit the recycled buffer and
// are read with no allocation.
func readGrowing(body io.Reader, announced int, buf []byte) ([]byte, error) {
	buf = buf[:0]
	if announced > cap(buf) {
		buf = make([]byte, 0, min(announced, firstBodyBytes))
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) == announced {
				// The announced body is in: look for its end without
				// growing, so that it keeps a buffer of exactly its size.
				var probe [1]byte
				m, err := io.ReadFull(body, probe[:])
				switch {
				case errors.Is(err, io.EOF):
					return buf, nil
				case err != nil:
					return nil, err
				}
				buf = append(buf, probe[:m]...)
				continue
			}
			// Grow by append's policy; the extra byte is overwritten by Read.
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF) && len(buf) < announced:
			return nil, io.ErrUnexpectedEOF
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// fieldValidation is the fieldValidation query parameter.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(q url.Values) (fieldValidation, error) {
	switch v := fieldValidation(q.Get("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationIgnore, validationWarn, validationStrict:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s, valid values are: %s, %s, %s", v, validationIgnore, validationWarn, validationStrict))
	}
}

// requestSerializer finds the codec for a request Content-Type.
func (s *Server) requestSerializer(contentType string) (runtime.SerializerInfo, error) {
	if contentType == "" {
		contentType = runtime.ContentTypeJSON
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, s.unsupportedMediaType()
	}
	info, ok := s.neg.SerializerFor(mt)
	if !ok {
		return runtime.SerializerInfo{}, s.unsupportedMediaType()
	}
	return info, nil
}

// decodeObject decodes a body into a new object of res, enforcing the kind
// and apiVersion and applying fieldValidation. It returns warnings for Warn.
func (s *Server) decodeObject(res *registry.Resource, info runtime.SerializerInfo, body []byte, fv fieldValidation) (runtime.Object, []string, error) {
	if len(body) == 0 {
		return nil, nil, apierrors.NewBadRequest("the body of the request was empty")
	}
	dec := info.Serializer
	if fv != validationIgnore && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj := res.New()
	gvk := res.GroupVersionKind()
	if info.MediaType == runtime.ContentTypeProtobuf {
		if done, err := objects.UnmarshalEnveloped(body, gvk, obj); done {
			if err != nil {
				return nil, nil, apierrors.NewBadRequest(decodeErrorMessage(err))
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			return obj, nil, nil
		}
	}
	out, gotGVK, err := dec.Decode(body, &gvk, obj)
	var warnings []string
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, nil, apierrors.NewBadRequest(decodeErrorMessage(err))
		}
		if sde, ok := runtime.AsStrictDecodingError(err); ok {
			if fv == validationStrict {
				return nil, nil, apierrors.NewBadRequest(sde.Error())
			}
			for _, e := range sde.Errors() {
				warnings = append(warnings, e.Error())
			}
		}
	}
	if out != obj {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %T", res.Kind, out))
	}
	if gotGVK != nil && (*gotGVK != gvk) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gotGVK.GroupVersion(), gvk.GroupVersion()))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, warnings, nil
}

// renewalFromWire is the object a protobuf PUT of namespace/name asks for
// when its body only renews the cached object, and that cached object, or
// nils (see objects.Store.RenewalFromWire). The body must be an envelope of
// exactly res's kind, as decodeObject's own fast path requires.
func (s *Server) renewalFromWire(res *registry.Resource, namespace, name string, body []byte) (obj, from runtime.Object) {
	gvk := res.GroupVersionKind()
	raw, ok := envelope.Raw(body, gvk)
	if !ok {
		return nil, nil
	}
	obj, from = s.objects.RenewalFromWire(res, namespace, name, raw)
	if obj != nil {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return obj, from
}

func decodeErrorMessage(err error) string {
	return fmt.Sprintf("the object provided is unrecognized or malformed: %v", err)
}

// maxPooledBytes bounds the scratch slices kept for reuse, as
// maxPooledEncodeBuffer does for responses: one large request should not pin
// its memory for every later small one.
const maxPooledBytes = 16 << 10

// byteBuffers recycles scratch byte slices whose contents are garbage as
// soon as the request step that filled them is over: write request bodies
// (a renewal's few hundred bytes are dead once decoded, since decoding
// copies every string and byte slice out of them, as
// TestDecodedObjectsShareNothingWithTheBody checks) and ownsAll's lookup
// keys. The zero value is ready.
type byteBuffers struct{ pool sync.Pool }

// get returns a slice to fill (possibly too small: appending then
// allocates).
func (p *byteBuffers) get() *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// put takes back b, now holding used, once nothing refers to used.
func (p *byteBuffers) put(b *[]byte, used []byte) {
	if cap(used) > maxPooledBytes {
		return
	}
	*b = used[:0]
	p.pool.Put(b)
}
