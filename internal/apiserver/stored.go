package apiserver

// stored.go is the object as the store holds it: the current object an
// update, patch, get or delete starts from (the watch cache, or the store
// while the cache lags), and the encoding objects are stored in.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
)

// freshnessWait bounds how long a read waits for the cache to catch up.
const freshnessWait = 3 * time.Second

// parseRV parses a resourceVersion query value ("" → 0).
func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// readRV turns a get/list resourceVersion parameter into a waitFresh target:
// unset is a consistent read (-1), "0" any version (0), else not older than it.
func readRV(param string) (int64, error) {
	if param == "" {
		return -1, nil
	}
	return parseRV(param)
}

// getCurrent returns the object at key, at least as new as minRV (< 0: as
// new as the store, a consistent read), or nil when there is none.
//
// The cache answers whenever it has caught up. When it lags (a burst of
// writes is still being decoded into it), the one key is read from storage
// instead, as kube-apiserver reads etcd for a GET without a resourceVersion
// and before every update: waiting for the cache would turn its lag into
// 504s on exactly the requests that write. Only a minRV newer than the store
// waits for the cache, and times out with Kubernetes' "Too large resource
// version".
func (s *Server) getCurrent(ctx context.Context, res *registry.Resource, key string, minRV int64) (runtime.Object, error) {
	if minRV >= 0 && s.cfg.Cache.Revision() >= minRV {
		return s.cached(key), nil
	}
	storeRV, err := s.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading current revision: %w", err)
	}
	if minRV < 0 {
		minRV = storeRV
	}
	switch {
	case s.cfg.Cache.Revision() >= minRV:
		return s.cached(key), nil
	case minRV > storeRV:
		if err := s.waitFresh(ctx, minRV); err != nil {
			return nil, err
		}
		return s.cached(key), nil
	}
	return s.getStored(ctx, res, key)
}

// waitFresh makes the cache at least as new as rv; rv < 0 means "as new as
// the store" (a consistent read).
func (s *Server) waitFresh(ctx context.Context, rv int64) error {
	if rv < 0 {
		cur, err := s.cfg.Store.CurrentRevision(ctx)
		if err != nil {
			return fmt.Errorf("reading current revision: %w", err)
		}
		rv = cur
	}
	if s.cfg.Cache.Revision() >= rv {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := s.cfg.Cache.WaitForRevision(ctx, rv); err != nil {
		return tooLargeResourceVersion(rv, s.cfg.Cache.Revision())
	}
	return nil
}

// cached returns the cache's object at key, or nil.
func (s *Server) cached(key string) runtime.Object {
	obj, ok := s.cfg.Cache.Get(key)
	if !ok {
		return nil
	}
	return obj
}

// getStored reads key's newest value from storage. The cache's object is
// reused when it is that same version (the cache lagged on other keys), so
// only a key written since costs a decode.
func (s *Server) getStored(ctx context.Context, res *registry.Resource, key string) (runtime.Object, error) {
	s.cfg.Metrics.StorageReads.WithLabelValues("get", res.GroupVersion.Group, res.Resource).Inc()
	kv, err := s.cfg.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError(res, key[strings.LastIndexByte(key, '/')+1:], key, err)
	}
	if obj := s.cached(key); obj != nil {
		if acc, err := meta.Accessor(obj); err == nil && acc.GetResourceVersion() == strconv.FormatInt(kv.ModRevision, 10) {
			return obj, nil
		}
	}
	return s.DecodeStored(res, kv.Value, kv.ModRevision)
}

// storeError turns a storage error from reading or writing key into the
// Status a client gets.
func storeError(res *registry.Resource, name, key string, err error) error {
	switch {
	case errors.Is(err, storage.ErrConflict):
		return conflict(res, name)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, storage.ErrUnavailable):
		// The client gave up, its timeout passed, or the store did not
		// answer: 504 or 503, never a server fault (unavailable.go).
		return storeUnavailable(err)
	case errors.Is(err, storage.ErrInsufficientStorage):
		// The disk is full: the write was not made, and retrying at once
		// will not help. apimachinery has no constructor (kube-apiserver
		// has no such case); the reason names the HTTP status.
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage,
			Reason: reasonInsufficientStorage, Message: err.Error(),
		}}
	}
	return fmt.Errorf("storage %s: %w", key, err)
}

// reasonInsufficientStorage is the Status reason of a 507.
const reasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// objectMeta returns the ObjectMeta embedded in a typed object.
func objectMeta(obj runtime.Object) (*metav1.ObjectMeta, error) {
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no ObjectMeta", obj)
	}
	om, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("%T has unexpected metadata type", obj)
	}
	return om, nil
}

// newStorageCodec returns the codec objects are stored with: Kubernetes'
// protobuf envelope ("k8s\x00" + Unknown), as kube-apiserver stores them in etcd.
func newStorageCodec(scheme *runtime.Scheme) (runtime.Encoder, runtime.Decoder) {
	s := protobuf.NewSerializer(scheme, scheme)
	return s, s
}

// encodeForStorage serializes obj, which must carry its TypeMeta.
func (s *Server) encodeForStorage(obj runtime.Object) ([]byte, error) {
	return encodeStored(s.storageEnc, obj)
}

func encodeStored(enc runtime.Encoder, obj runtime.Object) ([]byte, error) {
	var out singleWriteCapture
	if err := enc.Encode(obj, &out); err != nil {
		return nil, fmt.Errorf("encoding object for storage: %w", err)
	}
	return out.data, nil
}

// singleWriteCapture keeps the slice of a lone Write without copying it.
// That breaks io.Writer's "must not retain p", which is safe only for a
// caller that hands over memory it never touches again: the storage
// encoder (a protobuf.Serializer using a fresh SimpleAllocator per Encode)
// writes its whole output in one Write of a slice allocated for that call,
// so the slice becomes the stored value without a copy. Other writes (the
// serializer's constant prefix, when it writes one) are copied.
type singleWriteCapture struct {
	data   []byte
	writes int
}

var _ io.Writer = (*singleWriteCapture)(nil)

func (c *singleWriteCapture) Write(p []byte) (int, error) {
	c.writes++
	if c.writes == 1 {
		c.data = p
		return len(p), nil
	}
	// More than one write: the earlier slices may be reused by the writer,
	// so from here on everything is copied.
	if c.writes == 2 {
		c.data = append([]byte(nil), c.data...)
	}
	c.data = append(c.data, p...)
	return len(p), nil
}

// DecodeStored turns stored bytes into a typed object with TypeMeta and
// resourceVersion set.
func (s *Server) DecodeStored(res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	return decodeStored(s.storageDec, res, value, rev)
}

func decodeStored(dec runtime.Decoder, res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	done, err := unmarshalEnveloped(value, res.GroupVersionKind(), obj)
	if !done {
		_, _, err = dec.Decode(value, nil, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", res.Resource, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// protobufMagic starts Kubernetes' protobuf envelope: the four bytes, then a
// runtime.Unknown whose TypeMeta names the object and whose raw field holds
// the object's own message.
var protobufMagic = []byte("k8s\x00")

// unmarshalEnveloped decodes data, an object in Kubernetes' protobuf
// envelope, into obj (fresh from its resource's New) when the envelope
// names exactly gvk. It reports false, having left obj alone, for anything
// else (another or a partial kind, a content encoding, a malformed
// envelope): the caller then decodes with the protobuf serializer, whose
// defaults and error messages those cases keep.
//
// Why not the serializer always: it first copies the object's whole message
// out of the envelope (runtime.Unknown's raw bytes) and then decodes the
// copy. Every renewal decodes twice (the request body, then the stored value
// in the watch cache), and those copies were 7% of a 100,000-node server's
// allocations. The generated Unmarshal copies every string and byte slice
// out of its input, so decoding straight from data shares nothing with it.
func unmarshalEnveloped(data []byte, gvk schema.GroupVersionKind, obj runtime.Object) (bool, error) {
	u, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return false, nil
	}
	raw, ok := envelopeFor(data, gvk)
	if !ok {
		return false, nil
	}
	return true, u.Unmarshal(raw)
}

// envelopeFor returns the raw message of envelope data if its TypeMeta is
// exactly gvk and it carries no content encoding.
func envelopeFor(data []byte, gvk schema.GroupVersionKind) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, protobufMagic)
	if !ok {
		return nil, false
	}
	// Fields 1, 2, 3 of runtime.Unknown; its contentType (4) is ignored,
	// as the serializer ignores it.
	var typeMeta, raw, encoding []byte
	if !bytesFields(rest, &typeMeta, &raw, &encoding) || len(encoding) > 0 {
		return nil, false
	}
	var apiVersion, kind []byte // fields 1, 2 of runtime.TypeMeta
	if !bytesFields(typeMeta, &apiVersion, &kind) ||
		string(kind) != gvk.Kind || !isAPIVersion(apiVersion, gvk.GroupVersion()) {
		return nil, false
	}
	return raw, true
}

// bytesFields reads message b, whose fields must all be length-delimited:
// field number i goes to *into[i-1] (the last occurrence wins, as in a
// generated Unmarshal; fields past len(into) are skipped). It reports false
// for anything else, malformed input included.
func bytesFields(b []byte, into ...*[]byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num >= 1 && int(num) <= len(into) {
			*into[num-1] = v
		}
	}
	return true
}

// isAPIVersion reports whether b is gv's apiVersion ("group/version", or
// "version" for the core group), without building that string.
func isAPIVersion(b []byte, gv schema.GroupVersion) bool {
	if gv.Group == "" {
		return string(b) == gv.Version
	}
	group, version, ok := bytes.Cut(b, []byte("/"))
	return ok && string(group) == gv.Group && string(version) == gv.Version
}

// StorageEncoder returns the watch cache's encode function: the stored form
// of an object StorageDecoder returned, from which the cache decodes the
// objects it keeps compressed. It only reads obj.
func StorageEncoder(scheme *runtime.Scheme) func(obj runtime.Object) ([]byte, error) {
	enc, _ := newStorageCodec(scheme)
	return func(obj runtime.Object) ([]byte, error) { return encodeStored(enc, obj) }
}

// StorageDecoder returns the watch cache's decode function: it finds the
// resource a key belongs to and decodes the stored value as that resource's
// storage version (the first registered version of a storage resource).
// The objects it returns share their repeated strings through one intern
// table (see package intern): the cache holds every object for as long as it
// is current or in the event window, and their copies of the same reasons,
// labels and managedFields were a large share of its memory. The API server
// interns the objects it hands to the cache (StorageAdopter) with the same
// table (Config.Intern).
func StorageDecoder(scheme *runtime.Scheme, resources *registry.Set, table *intern.Table) func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
	_, dec := newStorageCodec(scheme)
	byKey := newKeyResources(resources)
	return func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
		res, err := byKey.lookup(key)
		if err != nil {
			return nil, err
		}
		obj, err := decodeStored(dec, res, value, rev)
		if err != nil {
			return nil, err
		}
		// A new version mostly repeats the previous one's strings: taking
		// them from it skips the table's lookups (see intern.ObjectLike).
		table.ObjectLike(obj, prev)
		return obj, nil
	}
}

// StorageAdopter returns the watch cache's Adopt function: it takes over an
// object the API server wrote (see Config.Intern), already interned, if it
// is of the type the key's resource stores, and sets its resourceVersion and
// kind as StorageDecoder would.
func StorageAdopter(resources *registry.Set) func(key string, obj any, rev int64) (runtime.Object, bool) {
	byKey := newKeyResources(resources)
	// adoptable holds each resource's Go type and its apiVersion and kind,
	// made once: setting them through SetGroupVersionKind builds a new
	// apiVersion string, one more heap object in every object cached.
	type adoptable struct {
		typ  reflect.Type
		kind metav1.TypeMeta
	}
	byRes := map[*registry.Resource]adoptable{}
	for _, r := range byKey {
		apiVersion, kind := r.GroupVersionKind().ToAPIVersionAndKind()
		byRes[r] = adoptable{reflect.TypeOf(r.New()), metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}}
	}
	return func(key string, obj any, rev int64) (runtime.Object, bool) {
		res, err := byKey.lookup(key)
		a := byRes[res]
		if err != nil || reflect.TypeOf(obj) != a.typ {
			return nil, false
		}
		o := obj.(runtime.Object)
		acc, err := meta.Accessor(o)
		if err != nil {
			return nil, false
		}
		if tm, ok := o.GetObjectKind().(*metav1.TypeMeta); ok {
			*tm = a.kind
		} else {
			o.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
		}
		acc.SetResourceVersion(strconv.FormatInt(rev, 10))
		return o, true
	}
}

// keyResources finds the resource a storage key belongs to.
type keyResources map[string]*registry.Resource

func newKeyResources(resources *registry.Set) keyResources {
	byPrefix := keyResources{}
	for _, r := range resources.All() {
		if _, ok := byPrefix[r.KeyPrefix("")]; !ok {
			byPrefix[r.KeyPrefix("")] = r
		}
	}
	return byPrefix
}

func (k keyResources) lookup(key string) (*registry.Resource, error) {
	// "/registry/<resource>/..." → "/registry/<resource>/"
	rest, ok := strings.CutPrefix(key, "/registry/")
	i := strings.IndexByte(rest, '/')
	if !ok || i < 0 {
		return nil, fmt.Errorf("key %q is not a resource key", key)
	}
	res, ok := k[key[:len("/registry/")+i+1]]
	if !ok {
		return nil, fmt.Errorf("key %q belongs to no served resource", key)
	}
	return res, nil
}

// withResourceVersion appends to dst the protobuf envelope stored (an
// object's storage encoding, which the serializer wrote with an empty
// metadata.resourceVersion) with its resourceVersion set to rv: exactly the
// bytes the same serializer writes for the object once the revision is
// known, since the generated marshalling writes every field in number order
// and an empty string as its tag and a zero length. So a write answered in
// protobuf (a kubelet's renewal) needs no second encoding of the object it
// has just stored; the encoding of the answer was about 2% of a renewing
// server's CPU (bench max --client lean, 64 clients), the splice copies
// about 600 bytes. It reports false, leaving dst as it was, for anything
// but one envelope whose object has one metadata field with one empty
// resourceVersion (TestWithResourceVersionMatchesSerializer).
func withResourceVersion(dst, stored []byte, rv string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(stored, protobufMagic)
	if !ok {
		return dst, false
	}
	raw, ok := onlyField(rest, 2) // runtime.Unknown's raw: the object
	if !ok {
		return dst, false
	}
	meta, ok := onlyField(rest[raw.start:raw.end], 1) // its ObjectMeta
	if !ok {
		return dst, false
	}
	metaBytes := rest[raw.start+meta.start : raw.start+meta.end]
	version, ok := onlyField(metaBytes, 6) // ObjectMeta's resourceVersion
	if !ok || version.start != version.end {
		return dst, false
	}
	// The resourceVersion grows from a zero length to rv with its length;
	// the metadata's and the object's length prefixes may grow with it.
	grow := len(rv) + protowire.SizeVarint(uint64(len(rv))) - 1
	metaLen := meta.end - meta.start
	rawLen := raw.end - raw.start
	newMetaLen := metaLen + grow
	newRawLen := rawLen + grow + protowire.SizeVarint(uint64(newMetaLen)) - protowire.SizeVarint(uint64(metaLen))

	rawBytes := rest[raw.start:raw.end]
	dst = append(dst, protobufMagic...)
	dst = append(dst, rest[:raw.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(newRawLen))
	dst = append(dst, rawBytes[:meta.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(newMetaLen))
	dst = append(dst, metaBytes[:version.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(len(rv)))
	dst = append(dst, rv...)
	dst = append(dst, metaBytes[version.end:]...)
	dst = append(dst, rawBytes[meta.end:]...)
	dst = append(dst, rest[raw.end:]...)
	return dst, true
}

// fieldSpan locates a length-delimited field in its message: its tag ends
// at tagEnd (where its length prefix starts), its value is [start, end).
type fieldSpan struct{ tagEnd, start, end int }

// onlyField finds length-delimited field num in message b, which must hold
// it exactly once and be well formed throughout.
func onlyField(b []byte, num protowire.Number) (fieldSpan, bool) {
	var span fieldSpan
	found := false
	for off := 0; off < len(b); {
		n, typ, tn := protowire.ConsumeTag(b[off:])
		if tn < 0 {
			return fieldSpan{}, false
		}
		if n != num {
			fn := protowire.ConsumeFieldValue(n, typ, b[off+tn:])
			if fn < 0 {
				return fieldSpan{}, false
			}
			off += tn + fn
			continue
		}
		if typ != protowire.BytesType || found {
			return fieldSpan{}, false
		}
		v, vn := protowire.ConsumeBytes(b[off+tn:])
		if vn < 0 {
			return fieldSpan{}, false
		}
		end := off + tn + vn
		span, found = fieldSpan{tagEnd: off + tn, start: end - len(v), end: end}, true
		off = end
	}
	return span, found
}
