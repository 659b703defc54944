package objects

import (
	"fmt"
	"io"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
)

// Form is the form objects are stored in: Kubernetes' protobuf envelope
// ("k8s\x00" + Unknown), as kube-apiserver stores them in etcd, for the
// resources of one set. It also makes the watch cache's glue
// (CacheOptions).
type Form struct {
	enc   runtime.Encoder
	dec   runtime.Decoder
	byKey keyResources
	// table interns what the cache's decoder returns (see CacheOptions).
	table *intern.Table
}

// NewForm returns the stored form of resources' objects, registered in
// scheme. table is the intern table the watch cache's decoder shares
// strings through (nil: the cache glue makes its own); the API server
// interns the objects it hands to the cache with the same table.
func NewForm(scheme *runtime.Scheme, resources *registry.Set, table *intern.Table) *Form {
	s := protobuf.NewSerializer(scheme, scheme)
	if table == nil {
		table = intern.New()
	}
	return &Form{enc: s, dec: s, byKey: newKeyResources(resources), table: table}
}

// Encode serializes obj, which must carry its TypeMeta, in the stored form.
// The result is not copied out of the encoder (singleWriteCapture): it is
// the caller's.
func (f *Form) Encode(obj runtime.Object) ([]byte, error) {
	var out singleWriteCapture
	if err := f.enc.Encode(obj, &out); err != nil {
		return nil, fmt.Errorf("encoding object for storage: %w", err)
	}
	return out.data, nil
}

// Decode turns stored bytes of res into a typed object with TypeMeta and
// resourceVersion (rev) set.
func (f *Form) Decode(res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	done, err := UnmarshalEnveloped(value, res.GroupVersionKind(), obj)
	if !done {
		_, _, err = f.dec.Decode(value, nil, obj)
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
