// Package objects is what an object means to Leasehold apart from HTTP: a
// Store over storage.Interface and the watch cache that gets, lists,
// watches, creates, updates (once, or again from a fresh read after a
// conflict: GuaranteedUpdate), applies and deletes objects, one or a
// collection, and the form they are stored in.
//
// Store owns, one file each:
//   - fresh.go: reads as fresh as a request needs (the watch cache once it
//     has caught up, the store while it lags);
//   - resourceversion.go: a client's resourceVersion, parsed once into the
//     integer the store compares;
//   - list.go: which state a list reads (the watch cache, or a page of
//     storage at an exact revision), its paging and the typed list;
//     continuetoken.go, its continue token; listoptions.go, the rules on
//     what list and watch options combine; selector.go, label and field
//     selectors;
//   - watch.go: where a watch starts (resourceVersion "", "0" or exact,
//     sendInitialEvents, too old, too new); the stream's encoding is
//     apiserver's;
//   - create.go, update.go, apply.go, delete.go, deletecollection.go: what
//     each write means: its preconditions, server-owned metadata and
//     conditional write (an update's hand-off of the written object to the
//     watch cache);
//   - validation.go: validation, with the shortcuts for metadata a write
//     leaves as stored;
//   - managedfields.go: managedFields, with the renewal shortcut;
//   - admit.go: the admission call;
//   - errors.go, unavailable.go, toolarge.go: the Status a client gets for
//     what storage answered;
//   - meta.go: reading and checking an object's metadata.
//
// The stored form (form.go) is Kubernetes' protobuf envelope, as
// kube-apiserver stores objects in etcd; envelope.go decodes it without a
// copy, splice.go writes a stored object's new resourceVersion into its
// encoding. The watch cache's glue (cache.go: its decoder, encoder, adopter
// and selection test) comes from one constructor, NewForm, which serve and
// every test harness use.
//
// Invariants: an update's resourceVersion is compared with the stored
// one in one place (update.go, updateFrom), before anything of the object
// changes, and every update and delete is conditional on the revision it
// read (a create, on the key's absence), so two writers can never both
// succeed from the same state. Objects from the
// cache are shared: nothing here changes them.
//
// Package apiserver turns requests into calls of a Store, and what they
// return into responses.
package objects
