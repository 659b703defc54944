// Package apiserver is Leasehold's lean Kubernetes API request path: one
// explicit pipeline of stages for every request, the eight verbs, watch
// streams and Status errors, for every resource described in
// internal/registry.
//
// It deliberately does not use k8s.io/apiserver's generic server: a renewal
// must stay near 100 µs of CPU (docs/performance.md, "The cost of a
// renewal"). It does use apimachinery for
// everything with a wire format: codecs, selectors, Status errors, patches and
// managed fields.
//
// # The pipeline
//
// Server.ServeHTTP (pipeline.go) runs the same stages, in this order, for
// every request, resource or not, each reading and filling one
// request.Record that it puts in the request's context:
//
//	request info → authenticate → audit → limit → authorize → verb (admits writes) → finish
//
// The seams are Config fields: Authenticator (internal/authn), Auditor
// (internal/audit), Authorizer (internal/authz), Admission
// (internal/admission), Limits, Timeout and Finish, the
// end-of-request hook that receives each finished record (request metrics by
// default). In-process clients (LoopbackConfig) pass the same stages under
// the identity their code gave them.
//
// HTTP is kept apart from what an object means. This package owns the
// pipeline, reading requests, negotiation, answers and watch streaming:
// package respond negotiates and encodes (shared with internal/discovery),
// answer.go turns objects into the negotiated representation and errors
// into Status bodies, write.go reads write requests and list.go the
// options of list, watch and deletecollection; create.go, update.go,
// patch.go, delete.go, deletecollection.go, get.go, list.go,
// watch.go and review.go each turn one verb's request into one call of the
// object layer, package internal/objects, and its answer into a response.
// watch.go keeps what a stream is on the wire: framing, flushing, write
// deadlines, timeouts and the encoding of bookmarks. What a request means
// (preconditions, resourceVersion semantics, cache or storage, paging and
// continue tokens, selectors, server-owned metadata, validation, managed
// fields, admission, the store's conditional writes, the stored form) is
// internal/objects'. *Server's methods are the pipeline's stages, the
// verbs' HTTP handlers and the reading and answering they share.
//
// # A renewal's path
//
// A lease renewal (PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/X)
// runs synchronously from the socket to the disk and back through these
// files, each with one role:
//
//  1. internal/connguard: the connection's limits and deadlines, between
//     the listener and net/http (TLS and HTTP/2 are the standard library's).
//  2. pipeline.go: ServeHTTP, the stages in order; the verb stage finds the
//     resource, checks the path's scope and calls update.
//  3. requestinfo.go: the URL and method as the record's Attributes.
//  4. authenticate.go: the caller (Config.Authenticator), or 401.
//  5. audit.go: the request's audit ID (Audit-ID) and, with an Auditor,
//     the policy's level and the RequestReceived event.
//  6. limits.go: the in-flight and per-user limits (or 429), and the
//     request's deadline (--request-timeout, ?timeout=).
//  7. authorize.go: Config.Authorizer's decision, or 403.
//  8. update.go: the PUT in HTTP terms: the body names the URL's object,
//     then one call of objects.Store.Update, then the answer.
//  9. write.go: reading a write request: the Accept header (answer.go's
//     accept, or 406), options, the body and its decoding (a protobuf
//     body through objects/envelope.go).
//  10. objects/update.go: what an update means: the uid and
//     resourceVersion preconditions, server-owned metadata, then
//     validation, managed fields, admission and the conditional write.
//  11. objects/resourceversion.go: the request's resourceVersion, parsed
//     once into the integer the store compares.
//  12. objects/fresh.go: the stored object the update starts from (the
//     watch cache, or the store while the cache lags).
//  13. objects/validation.go: validation, with the unchanged-metadata
//     shortcut.
//  14. objects/managedfields.go: managedFields, with the renewal shortcut.
//  15. objects/admit.go: the admission call (Config.Admission).
//  16. objects/form.go: the stored encoding (Kubernetes' protobuf
//     envelope).
//  17. internal/storage/embedded/committer.go: the conditional write: one
//     committer checks the revision, batches waiting writes and syncs them
//     to disk together (group commit); the answer returns once synced.
//  18. answer.go: the updated lease in the negotiated representation (a
//     protobuf answer spliced from the stored encoding, objects/splice.go).
//  19. respond/respond.go: negotiation and the pooled response encoder.
//
// After the response, the record goes to Config.Finish (metrics.go by
// default). The lease's own rules (registry/lease: PrepareForUpdate,
// ValidateUpdate, ChangedFields) are the only per-resource code on the way.
// Off the synchronous path, the watch cache takes the written lease over
// (objects/cache.go, the Adopt of Form.CacheOptions) from the store's event.
// A storage error becomes its Status in objects/errors.go.
//
// # The renewal fast path
//
// A renewal changes one field (spec.renewTime) of an object the server
// holds decoded in its watch cache, about 10,000 times a second for a
// 100,000-node fleet. The general update path would run structured-merge-diff,
// reflective metadata validation and two decodes per renewal; each step
// below proves that its shortcut gives the general path's answer, and falls
// back to it otherwise:
//
//   - managedFields (objects/managedfields.go, renewalManagedFields): when the lease
//     has one Update entry by the same manager, its metadata is unchanged
//     and every changed field is already owned by that entry, the result is
//     that entry with a new time. structured-merge-diff was about 70% of
//     the update handler's CPU. Ownership is checked against the parsed
//     set of only the changed fields' top-level member (ownsAll), so a
//     fleet's leases, whose documents all differ by their Node's uid, share
//     one cached set (the whole-document cache missed on every renewal and
//     held about 98 MB at 100,000 nodes); its lookup keys come from a pool
//     (a third of ownsAll's garbage), and the member is found by scanning
//     the document's bytes in place (objects/jsonmember.go: 1.4 -> 0.6 µs,
//     7 -> 0 allocations). Renewals within one second share one
//     timestamp (secondStamps): one allocation a second instead of one a
//     renewal, and a handful of stamps for 100,000 cached leases.
//     TestRenewalManagedFieldsMatchesFieldManager checks the equivalence.
//   - Validation (objects/validation.go): metadata equal to the stored
//     object's cannot fail rules it passed when stored (metaUnchanged; those field paths
//     were about a twentieth of a renewal's allocations), and the immutable
//     fields are compared by hand, not by reflective semantic equality
//     (about 7% of a renewal's CPU; TestValidateMetaUpdateMatchesApimachinery).
//   - Recognition (write.go renewalFromWire, objects/wirerenewal.go): a
//     protobuf PUT whose body is byte for byte the cached lease's encoding
//     but for spec.renewTime is not decoded at all: the request object is
//     the cached lease's top-level struct copied, with the new renewTime,
//     sharing the rest with the cache (1.7 instead of 3.1 µs, 344 B in 2
//     allocations instead of 1.5 KB in 34; the intern walk leaves what is
//     the cached lease's own alone). Anything else is decoded.
//   - Decoding (objects/envelope.go, UnmarshalEnveloped): a protobuf body is
//     decoded straight out of Kubernetes' envelope instead of first copying
//     the message out of it (those copies were 7% of a 100,000-node server's
//     allocations).
//   - Hand-off (objects/update.go, UpdateFrom): for resources with
//     registry.Resource.HandOffUpdates, the written lease is interned with
//     the watch cache's table (package intern, Config.Intern) and handed to
//     the cache (watchcache.Cache.Expect, on either store), which adopts it
//     (objects/cache.go, adopter) instead of decoding the stored value
//     again: a renewal decoded its lease twice (2.6% of the server's CPU
//     and 1 KB of garbage per renewal in the 100,000-node run).
//   - Answer (answer.go, respondWritten; objects/splice.go,
//     WithResourceVersion): a protobuf client's answer to an update is the
//     storage encoding just written, with the new resourceVersion spliced
//     into it, instead of a second encoding of the same object (about 2% of
//     the server's CPU under bench max). The generated marshalling writes fields in number order
//     and an empty resourceVersion as a zero-length field, so the splice
//     gives the serializer's own bytes
//     (TestWithResourceVersionMatchesSerializer,
//     TestProtobufUpdateAnswerIsTheEncodedObject); anything else takes the
//     general path.
//   - Context (pipeline.go, limits.go requestDeadline): the record and the
//     request's deadline enter the context together, one copy of the
//     request (256 B) instead of two; the deadline runs from arrival as
//     before, and a bad ?timeout= is still answered at the verb stage.
//     The deadline's timer and channel are built only when something
//     waits on them (request.WithDeadline): a renewal's waits check Err.
//   - Memory (write.go, respond/respond.go, objects): request bodies
//     are read into recycled buffers that grow as bytes arrive (never from
//     the announced Content-Length alone), responses
//     are encoded into pooled buffers and allocators (two to three
//     allocations fewer per response), the stored encoding is kept
//     without a copy (objects/form.go, singleWriteCapture), and admission
//     (objects/admit.go) reads the record's attributes in place.
//
// Below the handler, the embedded store recycles its write requests and
// their answer channels, and connguard reuses one header timer per
// connection. What remains of a renewal's server CPU, and the trivial
// HTTP/2+TLS handler it is measured against (leasehold bench baseline,
// scripts/renewal-ratio.sh), is in the README's section on the renewal's
// cost.
//
// Invariants:
//   - Every response to a resource request is either the object (or list,
//     table, metadata) in the negotiated encoding, or a metav1.Status with a
//     4xx/5xx code; a panic in a handler becomes a 500 Status.
//   - Nothing runs a verb for a request that has not been authenticated,
//     admitted by the limits and authorized; the Attributes authorized are
//     the ones admission and the Finish hook see.
//   - Reads are served from the watch cache; a read that must be consistent
//     first waits until the cache has caught up with the store's revision.
//   - Writes go to storage with a revision precondition, so two writers can
//     never both succeed from the same observed state.
//   - Objects taken from the cache are shared: handlers deep-copy before
//     mutating.
package apiserver
