// Package e2e holds the end-to-end tests of namespace termination against a
// real server (servertest): the namespace registry's hooks, the
// NamespaceLifecycle admission plugin and the namespace controller
// together. It has no code of its own; the tests live apart from the
// controller's unit tests so those build without the whole server.
package e2e
