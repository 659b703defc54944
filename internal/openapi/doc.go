// Package openapi serves /openapi/v2 and /openapi/v3 for the resources in a
// registry.Set and provides the server-side apply type converter built from
// the same definitions.
//
// Every schema comes from zz_generated.openapi.go, which
// k8s.io/kube-openapi/cmd/openapi-gen generates from the k8s.io/api and
// k8s.io/apimachinery types (regenerate with `go generate` or generate.sh);
// nothing here writes a schema by hand. Paths and operations are described as
// kube-openapi route containers derived from the registry.Set and turned into
// documents by kube-openapi's own builders (pkg/builder for v2, pkg/builder3
// for v3), and served by its handlers (pkg/handler, pkg/handler3), which add
// ETags, the v3 ?hash= immutable caching and the protobuf encodings.
//
// Invariants: all documents are built once in New and never change, so the
// handlers only copy cached bytes at request time; every definition that
// describes a served kind (and every kind the scheme registers) carries
// x-kubernetes-group-version-kind, which both kubectl and the type converter
// rely on to find a kind's schema.
package openapi

//go:generate bash generate.sh
