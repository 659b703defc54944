package namespaces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/registry"
)

// content deletes and lists one resource's objects in one namespace.
type content interface {
	// deleteCollection deletes every object of res in namespace.
	deleteCollection(ctx context.Context, res *registry.Resource, namespace string) error
	// list returns the metadata of the objects of res left in namespace,
	// read consistently.
	list(ctx context.Context, res *registry.Resource, namespace string) ([]metav1.PartialObjectMetadata, error)
}

// restContent is content through the client's REST interface by absolute
// path: the typed clientset knows only the types it was generated for, and
// the controller must empty every served namespaced resource.
type restContent struct {
	rest rest.Interface
}

// collectionPath is the REST path of res's objects in namespace.
func collectionPath(res *registry.Resource, namespace string) []string {
	segs := []string{"/apis", res.GroupVersion.Group, res.GroupVersion.Version}
	if res.GroupVersion.Group == "" {
		segs = []string{"/api", res.GroupVersion.Version}
	}
	return append(segs, "namespaces", namespace, res.Resource)
}

func (c restContent) deleteCollection(ctx context.Context, res *registry.Resource, namespace string) error {
	err := c.rest.Delete().AbsPath(collectionPath(res, namespace)...).
		SetHeader("Accept", "application/json").Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s in namespace %s: %w", res.GroupResource(), namespace, err)
	}
	return nil
}

// metadataListAccept asks for a list of metadata only, full JSON as fallback
// (both decode into a PartialObjectMetadataList).
const metadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

func (c restContent) list(ctx context.Context, res *registry.Resource, namespace string) ([]metav1.PartialObjectMetadata, error) {
	raw, err := c.rest.Get().AbsPath(collectionPath(res, namespace)...).
		SetHeader("Accept", metadataListAccept).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", res.GroupResource(), namespace, err)
	}
	var l metav1.PartialObjectMetadataList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("decoding the list of %s in namespace %s: %w", res.GroupResource(), namespace, err)
	}
	return l.Items, nil
}

// outcome is what one round of deleting a namespace's content found.
type outcome struct {
	// failures are the resources whose deletion or listing failed.
	failures []error
	// remaining counts objects left per resource ("leases.coordination.k8s.io"),
	// finalizers the finalizers holding them.
	remaining  map[string]int
	finalizers map[string]int
}

func (o *outcome) empty() bool { return len(o.remaining) == 0 && len(o.failures) == 0 }

func (o *outcome) err() error {
	if len(o.failures) == 0 {
		return nil
	}
	return errors.Join(o.failures...)
}

// remainingSummary lists what is left, sorted (for logs and conditions).
func (o *outcome) remainingSummary() string {
	parts := make([]string, 0, len(o.remaining))
	for gr, n := range o.remaining {
		parts = append(parts, fmt.Sprintf("%s has %d resource instances", gr, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// deleteContent deletes every namespaced resource's objects in namespace,
// then lists what is left (objects held by finalizers, or written since).
func (c *Controller) deleteContent(ctx context.Context, namespace string) *outcome {
	o := &outcome{remaining: map[string]int{}, finalizers: map[string]int{}}
	for _, res := range c.resources {
		if err := c.content.deleteCollection(ctx, res, namespace); err != nil {
			o.failures = append(o.failures, err)
			continue
		}
		left, err := c.content.list(ctx, res, namespace)
		if err != nil {
			o.failures = append(o.failures, err)
			continue
		}
		if len(left) == 0 {
			continue
		}
		// Upstream's spelling: resource.group, with the dot even for core.
		o.remaining[res.Resource+"."+res.GroupVersion.Group] += len(left)
		for _, item := range left {
			for _, f := range item.Finalizers {
				o.finalizers[f]++
			}
		}
	}
	return o
}
