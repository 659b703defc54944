package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/registry"
)

// writer performs generic reads and writes of any served resource through
// the loopback REST client, by absolute path (the typed clientset only knows
// the types it was generated for, and the GC must handle every served one).
type writer struct {
	rest rest.Interface
}

// path returns the REST path segments of one object.
func path(res *registry.Resource, namespace, name string) []string {
	var segs []string
	if res.GroupVersion.Group == "" {
		segs = []string{"/api", res.GroupVersion.Version}
	} else {
		segs = []string{"/apis", res.GroupVersion.Group, res.GroupVersion.Version}
	}
	if res.Namespaced {
		segs = append(segs, "namespaces", namespace)
	}
	return append(segs, res.Resource, name)
}

// partialMetadataAccept asks for the metadata only, with full JSON as fallback.
const partialMetadataAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// get reads an object's metadata with a consistent read (no resourceVersion:
// the server waits for its cache to reach the store's revision).
func (w writer) get(ctx context.Context, res *registry.Resource, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	raw, err := w.rest.Get().AbsPath(path(res, namespace, name)...).
		SetHeader("Accept", partialMetadataAccept).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding %s %s/%s: %w", res.GroupResource(), namespace, name, err)
	}
	return &m, nil
}

// delete deletes one object if its uid is still uid.
func (w writer) delete(ctx context.Context, res *registry.Resource, namespace, name string, uid types.UID, policy metav1.DeletionPropagation) error {
	opts := metav1.DeleteOptions{
		TypeMeta:          metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"},
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	}
	body, err := json.Marshal(&opts)
	if err != nil {
		return fmt.Errorf("encoding DeleteOptions: %w", err)
	}
	return w.rest.Delete().AbsPath(path(res, namespace, name)...).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").
		Body(body).Do(ctx).Error()
}

// metadataPatch is a JSON merge patch of the metadata fields the GC writes.
// ResourceVersion makes it conditional on the state it was computed from.
type metadataPatch struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		// Pointers to slices so that "set to nothing" encodes as null,
		// which a merge patch reads as "remove the field".
		OwnerReferences *[]metav1.OwnerReference `json:"ownerReferences,omitempty"`
		Finalizers      *[]string                `json:"finalizers,omitempty"`
	} `json:"metadata"`
}

// patchMetadata applies p to one object.
func (w writer) patchMetadata(ctx context.Context, res *registry.Resource, namespace, name string, p *metadataPatch) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	return w.rest.Patch(types.MergePatchType).AbsPath(path(res, namespace, name)...).
		SetHeader("Accept", "application/json").Body(body).Do(ctx).Error()
}

// nullable returns a pointer for metadataPatch that encodes as null when s is
// empty, so the field is removed rather than set to [].
func nullable[T any](s []T) *[]T {
	if len(s) == 0 {
		var empty []T
		return &empty
	}
	return &s
}
