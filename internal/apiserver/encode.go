package apiserver

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
)

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

// StorageEncoder returns the watch cache's encode function: the stored form
// of an object StorageDecoder returned, from which the cache decodes the
// objects it keeps compressed. It only reads obj.
func StorageEncoder(scheme *runtime.Scheme) func(obj runtime.Object) ([]byte, error) {
	enc, _ := newStorageCodec(scheme)
	return func(obj runtime.Object) ([]byte, error) { return encodeStored(enc, obj) }
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

// writeObject encodes obj with the negotiated serializer. obj must already be
// in the negotiated representation (object, Table, metadata).
func (s *Server) writeObject(w http.ResponseWriter, code int, n negotiated, obj runtime.Object) {
	enc := n.info.Serializer
	if n.pretty && n.info.PrettySerializer != nil {
		enc = n.info.PrettySerializer
	}
	buf := s.encodeBufs.get()
	defer s.encodeBufs.put(buf)
	mediaType := n.info.MediaType
	if err := buf.encode(enc, obj); err != nil {
		// Some values JSON carries cannot be written as YAML (a control
		// character echoed from a bad selector in a Status message): answer
		// in JSON, which every client reads, rather than a bare 500.
		jsonInfo, _ := s.serializerFor(runtime.ContentTypeJSON)
		buf.out.Reset()
		if mediaType == jsonInfo.MediaType || jsonInfo.Serializer.Encode(obj, &buf.out) != nil {
			s.logger.Error("encoding response", "err", err)
			w.Header().Set("Content-Type", runtime.ContentTypeJSON)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: encoding response failed","reason":"InternalError","code":500}`))
			return
		}
		mediaType = jsonInfo.MediaType
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(buf.out.Len()))
	w.WriteHeader(code)
	// The response writer copies what it is given, so the buffer can go
	// back to the pool when this returns.
	_, _ = w.Write(buf.out.Bytes())
}

var (
	tableGVK   = metav1.SchemeGroupVersion.WithKind("Table")
	pomGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	pomListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// transform turns an object (or list) into the representation n asks for.
func (s *Server) transform(res *registry.Resource, n negotiated, obj runtime.Object, isList, noHeaders bool) (runtime.Object, error) {
	switch n.target {
	case targetTable:
		return s.toTable(res, obj, isList, noHeaders, n.include)
	case targetPartialObjectMetadata, targetPartialObjectMetadataList:
		if isList {
			return toPartialList(obj)
		}
		return toPartial(obj)
	}
	return obj, nil
}

func toPartial(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	om, err := objectMeta(obj)
	if err != nil {
		return nil, err
	}
	p := &metav1.PartialObjectMetadata{ObjectMeta: *om.DeepCopy()}
	p.SetGroupVersionKind(pomGVK)
	return p, nil
}

func toPartialList(list runtime.Object) (*metav1.PartialObjectMetadataList, error) {
	out := &metav1.PartialObjectMetadataList{}
	out.SetGroupVersionKind(pomListGVK)
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	out.ResourceVersion, out.Continue, out.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
	err = meta.EachListItem(list, func(o runtime.Object) error {
		p, err := toPartial(o)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, *p)
		return nil
	})
	if out.Items == nil {
		out.Items = []metav1.PartialObjectMetadata{}
	}
	return out, err
}

// toTable renders the server-side printer columns, each row carrying what
// include asks for (the object's metadata by default, as kube-apiserver).
func (s *Server) toTable(res *registry.Resource, obj runtime.Object, isList, noHeaders bool, include metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	t := &metav1.Table{}
	t.SetGroupVersionKind(tableGVK)
	if !noHeaders {
		t.ColumnDefinitions = res.TableColumns
	}
	addRow := func(o runtime.Object) error {
		ro, err := tableRowObject(res, o, include)
		if err != nil {
			return err
		}
		row := metav1.TableRow{Cells: res.TableRow(o), Object: ro}
		t.Rows = append(t.Rows, row)
		return nil
	}
	if isList {
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		t.ResourceVersion, t.Continue, t.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		if err := meta.EachListItem(obj, addRow); err != nil {
			return nil, err
		}
	} else {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		t.ResourceVersion = acc.GetResourceVersion()
		if err := addRow(obj); err != nil {
			return nil, err
		}
	}
	if t.Rows == nil {
		t.Rows = []metav1.TableRow{}
	}
	return t, nil
}

// setListGVK stamps a list's TypeMeta.
func setListGVK(res *registry.Resource, list runtime.Object) {
	list.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: res.GroupVersion.Group, Version: res.GroupVersion.Version, Kind: res.ListKind})
}

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
