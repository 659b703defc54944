package objects

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// CacheOptions returns o with the watch cache's glue to the stored form
// set: Decode, Adopt, Encode, SameSelection, Thin and Thicken. Serve and every test
// harness build their cache's options here, so they all keep objects as
// the server does.
func (f *Form) CacheOptions(o watchcache.Options) watchcache.Options {
	o.Decode = f.decoder()
	o.Adopt = f.adopter()
	o.Encode = f.Encode
	o.SameSelection = f.sameSelection
	o.Thin = f.thin
	o.Thicken = f.thicken
	return o
}

// decoder returns the watch cache's decode function: it finds the resource
// a key belongs to and decodes the stored value as that resource's storage
// version (the first registered version of a storage resource). The
// objects it returns share their repeated strings through one intern table
// (see package intern): the cache holds every object for as long as it is
// current or in the event window, and their copies of the same reasons,
// labels and managedFields were a large share of its memory. The API
// server interns the objects it hands to the cache (adopter) with the same
// table (apiserver.Config.Intern).
func (f *Form) decoder() func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
	return func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
		res, err := f.byKey.lookup(key)
		if err != nil {
			return nil, err
		}
		obj, err := f.Decode(res, value, rev)
		if err != nil {
			return nil, err
		}
		// A new version mostly repeats the previous one's strings: taking
		// them from it skips the table's lookups (see intern.ObjectLike).
		f.table.ObjectLike(obj, prev)
		return obj, nil
	}
}

// adopter returns the watch cache's Adopt function: it takes over an
// object the API server wrote (see apiserver.Config.Intern), already
// interned, if it is of the type the key's resource stores, and sets its
// resourceVersion and kind as the decoder would.
func (f *Form) adopter() func(key string, obj runtime.Object, rev int64) (runtime.Object, bool) {
	byKey := f.byKey
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
	return func(key string, o runtime.Object, rev int64) (runtime.Object, bool) {
		res, err := byKey.lookup(key)
		a := byRes[res]
		if err != nil || reflect.TypeOf(o) != a.typ {
			return nil, false
		}
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

// sameSelection is the watch cache's Options.SameSelection: two states of
// one object are alike for every matcher when their labels and selectable
// fields are equal (name and namespace are the key's), since a matcher
// reads nothing else.
func (f *Form) sameSelection(key string, prev, obj runtime.Object) bool {
	res, err := f.byKey.lookup(key)
	if err != nil {
		return false
	}
	a, err1 := meta.Accessor(prev)
	b, err2 := meta.Accessor(obj)
	if err1 != nil || err2 != nil || !maps.Equal(a.GetLabels(), b.GetLabels()) {
		return false
	}
	return res.SelectableFields == nil || maps.Equal(res.SelectableFields(prev), res.SelectableFields(obj))
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
