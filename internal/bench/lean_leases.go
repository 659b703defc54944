package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// leaseResource names leases in errors made from answers that carry no
// Status, as client-go's do.
var leaseResource = coordinationv1.Resource("leases")

// leanLeases is the lean client's Lease API in one namespace. It keeps the
// buffers of one request at a time, so it belongs to one goroutine.
type leanLeases struct {
	conn      *leanConn
	namespace string

	sendHeader http.Header // PUT and POST
	getHeader  http.Header

	// out holds the encoded request body; body reads it for the transport.
	// Both are reused once the transport has closed body.
	out   bytes.Buffer
	alloc runtime.Allocator
	body  *requestBody
	// in holds the answer being decoded.
	in bytes.Buffer
	// spare is a Lease given up by the caller of a successful Update, to be
	// decoded into next: a renewal then allocates no top-level object.
	spare *coordinationv1.Lease
	// scratch is the Lease parked leases are decoded into (lean_parked.go).
	scratch coordinationv1.Lease
}

func newLeanLeases(conn *leanConn, namespace string) *leanLeases {
	return &leanLeases{
		conn:      conn,
		namespace: namespace,
		sendHeader: http.Header{
			"Content-Type": {conn.mediaType},
			"Accept":       {conn.mediaType},
			"User-Agent":   {conn.userAgent},
		},
		getHeader: http.Header{
			"Accept":     {conn.mediaType},
			"User-Agent": {conn.userAgent},
		},
	}
}

// Update implements leaseAPI with a PUT of the lease to its own URL.
func (l *leanLeases) Update(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out, err := l.do(ctx, auth, http.MethodPut, l.conn.urls.get(l.namespace, lease.Name), lease.Name, lease)
	if err != nil {
		return nil, err
	}
	l.spare = lease
	return out, nil
}

// Get implements leaseAPI.
func (l *leanLeases) Get(ctx context.Context, auth authorization, name string) (*coordinationv1.Lease, error) {
	return l.do(ctx, auth, http.MethodGet, l.conn.urls.get(l.namespace, name), name, nil)
}

// Create implements leaseAPI with a POST to the namespace's collection.
func (l *leanLeases) Create(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return l.do(ctx, auth, http.MethodPost, l.conn.urls.get(l.namespace, ""), lease.Name, lease)
}

// do sends one request, with send encoded as its body unless nil and auth
// as its Authorization unless nil, and decodes the answer: a Lease on 2xx,
// otherwise the apierrors error the answer's Status describes. name is the
// lease's, for errors.
func (l *leanLeases) do(ctx context.Context, auth authorization, method string, u *url.URL, name string, send *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	contentType, err := l.send(ctx, auth, method, u, name, send)
	if err != nil {
		return nil, err
	}
	return l.decodeLease(contentType, method, u)
}

// send is do without the decoding: a 2xx answer's body is left in l.in,
// and its Content-Type returned.
func (l *leanLeases) send(ctx context.Context, auth authorization, method string, u *url.URL, name string, send *coordinationv1.Lease) (string, error) {
	req := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     l.getHeader,
		Host:       u.Host,
	}
	if send != nil {
		body, err := l.encode(send)
		if err != nil {
			return "", err
		}
		req.Header = l.sendHeader
		req.Body = body
		req.ContentLength = int64(body.Len())
	}
	// The header maps are this goroutine's and reused, so a node's
	// authorization is set in place: no allocation per request.
	if auth != nil {
		req.Header["Authorization"] = auth
	} else {
		delete(req.Header, "Authorization")
	}
	resp, err := l.conn.http.Do(req.WithContext(ctx))
	if err != nil {
		// A transport that gave up on the request (a timeout, a lost
		// connection) may not have finished encoding its headers: leave
		// the maps to it, as encode leaves a body it has not closed.
		l.sendHeader, l.getHeader = l.sendHeader.Clone(), l.getHeader.Clone()
		return "", err
	}
	l.in.Reset()
	_, readErr := l.in.ReadFrom(resp.Body)
	closeErr := resp.Body.Close()
	if readErr == nil {
		readErr = closeErr
	}
	if readErr != nil {
		return "", fmt.Errorf("reading the answer to %s %s: %w", method, u.Path, readErr)
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return "", l.statusError(resp, method, name)
	}
	return resp.Header.Get("Content-Type"), nil
}

// encode writes lease into the request buffer and returns the body that
// reads it. The serializer takes the kind from the object's TypeMeta, which
// objects built here or returned by the typed client leave empty.
func (l *leanLeases) encode(lease *coordinationv1.Lease) (*requestBody, error) {
	if l.body == nil || !l.body.closed.Load() {
		// The transport may close a body after RoundTrip has returned and
		// so still be reading the buffer: leave it to it. (The allocator's
		// memory is only used during Encode, which copies it into out.)
		l.body = &requestBody{}
		l.out = bytes.Buffer{}
	}
	lease.APIVersion, lease.Kind = coordinationv1.SchemeGroupVersion.String(), "Lease"
	l.out.Reset()
	var err error
	if enc, ok := l.conn.encoder.(runtime.EncoderWithAllocator); ok {
		err = enc.EncodeWithAllocator(lease, &l.out, &l.alloc)
	} else {
		err = l.conn.encoder.Encode(lease, &l.out)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding lease %s/%s as %s: %w", lease.Namespace, lease.Name, l.conn.mediaType, err)
	}
	l.body.reset(l.out.Bytes())
	return l.body, nil
}

// decodeLease decodes the answer in l.in into the spare Lease if there is
// one.
func (l *leanLeases) decodeLease(contentType, method string, u *url.URL) (*coordinationv1.Lease, error) {
	dec := l.conn.decoderFor(contentType)
	if dec == nil {
		return nil, fmt.Errorf("answer to %s %s: unsupported content type %q", method, u.Path, contentType)
	}
	into := l.spare
	l.spare = nil
	if into == nil {
		into = &coordinationv1.Lease{}
	}
	lease, err := decodeLeaseInto(dec, l.in.Bytes(), into)
	if err != nil {
		return nil, fmt.Errorf("the answer to %s %s: %w", method, u.Path, err)
	}
	return lease, nil
}

// decodeLeaseInto decodes data into into, which it clears first: decoders
// fill in the object they are given without clearing the fields the data
// leaves out (JSON).
func decodeLeaseInto(dec runtime.Decoder, data []byte, into *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	*into = coordinationv1.Lease{}
	obj, _, err := dec.Decode(data, nil, into)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil, fmt.Errorf("a %T, not a Lease", obj)
	}
	return lease, nil
}

// statusError turns a non-2xx answer in l.in into the error client-go's
// typed client returns for it: the server's Status as an apierrors error,
// or a generic one made from the HTTP code when the body holds no Status.
func (l *leanLeases) statusError(resp *http.Response, method, name string) error {
	if dec := l.conn.decoderFor(resp.Header.Get("Content-Type")); dec != nil {
		obj, _, err := dec.Decode(l.in.Bytes(), nil, &metav1.Status{})
		if status, ok := obj.(*metav1.Status); err == nil && ok && status.Status != metav1.StatusSuccess {
			if status.Code == 0 {
				status.Code = int32(resp.StatusCode)
			}
			return apierrors.FromObject(status)
		}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, method, leaseResource, name, l.in.String(), 0, true)
}
