// Package discovery serves the Kubernetes API discovery documents for the
// resources in a registry.Set, byte-for-byte in the shapes kube-apiserver
// uses, so that unmodified kubectl and client-go can find Leasehold's
// resources:
//
//   - /api (APIVersions), /api/v1 (APIResourceList), /apis (APIGroupList),
//     /apis/<group> (APIGroup) and /apis/<group>/<version> (APIResourceList);
//   - aggregated discovery (apidiscovery.k8s.io v2 and v2beta1
//     APIGroupDiscoveryList) on /api and /apis when the Accept header asks for
//     it with g=apidiscovery.k8s.io;v=...;as=APIGroupDiscoveryList, with an
//     ETag so clients can revalidate their caches cheaply;
//   - /version (version.Info).
//
// Documents are negotiated in JSON, YAML or protobuf
// (application/vnd.kubernetes.protobuf) and encoded with the apimachinery
// codecs.
//
// Invariants: the registry.Set is immutable, so every document except /api
// (whose serverAddressByClientCIDRs depends on the connection) is a pure
// function of it and its ETag is computed once in New. Each request builds
// its own document objects, so concurrent requests share no mutable state
// (the apimachinery versioning encoder temporarily rewrites an object's
// TypeMeta while encoding, which would race on a shared object).
package discovery
