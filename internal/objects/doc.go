// Package objects is what an object means to Leasehold apart from HTTP:
// the form objects are stored in, and the glue that lets the watch cache
// keep them decoded.
//
// The stored form (form.go) is Kubernetes' protobuf envelope, as
// kube-apiserver stores objects in etcd; envelope.go decodes it without a
// copy, splice.go writes a stored object's new resourceVersion into its
// encoding. The cache glue (cache.go) hands the watch cache its decoder,
// encoder, adopter and selection test, all made by one constructor, NewForm,
// which serve and every test harness use.
//
// The HTTP side, package apiserver, turns requests into calls here and
// answers into responses.
package objects
