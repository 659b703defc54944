// Package server assembles `leasehold serve`: storage, watch cache, the API
// request path, discovery, OpenAPI, metrics, TLS and the controllers, and
// owns their lifetimes. Run returns only after every goroutine it started
// has stopped and the store is closed, so an acknowledged write is on disk
// when the process exits.
//
// Run (run.go) is a list of steps, each a function in its own file:
//
//   - config.go: Config, what the flags set, and every flag struct it holds
//     (AuditConfig, TrustConfig, ReplicaConfig; the others' packages are
//     named at their fields);
//   - tls.go: setupTLS, the CA and the serving certificate;
//   - storage.go: openStorage, the embedded store or etcd, and its metrics;
//   - cluster.go: openCluster, when serve runs behind a cluster;
//   - objects.go: openObjects, the scheme, the served resources (from
//     internal/served) and the watch cache;
//   - access.go: openAccess, authentication, authorization and admission,
//     on its own and behind a cluster;
//   - api.go: openAPI, OpenAPI, the non-resource paths, the auditor
//     (audit.go) and the request path (internal/apiserver);
//   - background.go: startBackground, the work that runs while serving and
//     the one owner that stops it;
//   - controllers.go: startStandalone, the system namespaces, the bootstrap
//     policy and the controllers, on its own only (elected in
//     leaderelect.go);
//   - listen.go: listen, the secure port and the admin kubeconfig;
//   - shutdown.go: shutdown, the graceful end of serving.
//
// health.go holds /healthz, /livez and /readyz with their checks and the
// store probe behind /readyz.
package server
