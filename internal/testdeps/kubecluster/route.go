package kubecluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// The APIService this harness re-routes, and what kube-apiserver
// registers for it by itself (aggregation.md §6.5): a Local APIService
// (no spec.service) with priorities 16500/15 and the label
// automanaged=onstart.
const (
	LeaseAPIService      = "v1.coordination.k8s.io"
	automanagedLabel     = "kube-aggregator.kubernetes.io/automanaged"
	builtinGroupPriority = 16500
	builtinVersionPrio   = 15
)

// routeTimeout bounds the wait for the APIService's Available condition.
// kube-apiserver probes on every APIService change, so this is seconds
// unless the backend does not answer.
const routeTimeout = 90 * time.Second

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// RouteOptions say where RouteGroupVersion sends coordination.k8s.io/v1.
type RouteOptions struct {
	// Port is the backend's HTTPS port on 127.0.0.1/localhost: the
	// APIService's spec.service.port.
	Port int
	// CABundle is the PEM CA that kube-apiserver checks the backend's
	// serving certificate against (IssueServingCert's caPEM).
	CABundle []byte
	// ServiceName and Namespace name the Service created for the route;
	// "leasehold" and "kube-system" when empty. The backend's serving
	// certificate must carry the DNS name ServiceName.Namespace.svc.
	ServiceName, Namespace string
	// Version is the version of coordination.k8s.io routed: "v1" when
	// empty, or "v1beta1" (LeaseCandidates, where the cluster enables it).
	Version string
}

// builtinVersionPriorities are kube-apiserver's own versionPriority of each
// version of coordination.k8s.io it registers (aggregation.md §6.5).
var builtinVersionPriorities = map[string]int64{"v1": builtinVersionPrio, "v1beta1": 13, "v1alpha2": 12}

// apiServiceName is the APIService of a version of coordination.k8s.io.
func apiServiceName(version string) string {
	if version == "" {
		version = "v1"
	}
	return version + ".coordination.k8s.io"
}

func (o *RouteOptions) defaults() {
	if o.Version == "" {
		o.Version = "v1"
	}
	if o.ServiceName == "" {
		o.ServiceName = "leasehold"
	}
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
}

// ServerName is the TLS server name kube-apiserver sends to, and checks
// in, the backend's serving certificate: <service>.<namespace>.svc, even
// though it dials localhost.
func (o RouteOptions) ServerName() string {
	o.defaults()
	return o.ServiceName + "." + o.Namespace + ".svc"
}

// RouteGroupVersion makes kube-apiserver's aggregator send every request
// for coordination.k8s.io/v1 (opts.Version) to the backend on 127.0.0.1:opts.Port, and
// waits until the APIService is Available=True (kube-apiserver's probe of
// GET /apis/coordination.k8s.io/v1 passed). When it already pointed at
// another remote backend, the True seen may still be that backend's
// (kube-apiserver writes the condition only when it changes, so nothing
// tells the two apart); the new backend is used from the update on.
//
// What it takes for an ExternalName Service pointing at localhost, on a
// port other than 443, to work (found in kube-apiserver 1.33's code and
// checked by this package's tests):
//   - --enable-aggregator-routing=false. The endpoint resolver used when it
//     is true refuses ExternalName Services ("unsupported service type");
//     the ClusterIP resolver turns one into externalName:port.
//   - The port comes from the APIService (spec.service.port), not from the
//     Service: for ExternalName the resolver never looks at the Service's
//     ports, so the Service needs none, and the availability controller
//     skips its port and endpoint checks (those are for ClusterIP
//     Services only).
//   - "localhost" is resolved by kube-apiserver's own resolver (Go's, via
//     /etc/hosts) and dialed directly (Go's ProxyFromEnvironment never
//     proxies localhost). No kube-proxy, DNS add-on or node is involved.
//   - kube-apiserver sends, and verifies against caBundle, the TLS server
//     name <service>.<namespace>.svc (RouteOptions.ServerName), so the
//     backend's certificate must carry that name; "localhost" or 127.0.0.1
//     in it are not enough. Note that the availability probe itself does
//     not verify the certificate (it dials with InsecureSkipVerify), so an
//     APIService can be Available=True while every proxied request fails
//     with 503 "x509: certificate is valid for …": test real requests.
//   - The label kube-aggregator.kubernetes.io/automanaged=onstart must be
//     removed, or the next kube-apiserver start puts the built-in Local
//     spec back (aggregation.md §6.5).
func (c *Cluster) RouteGroupVersion(t testing.TB, opts RouteOptions) {
	t.Helper()
	opts.defaults()
	if opts.Port <= 0 || opts.Port > 65535 {
		t.Fatalf("kubecluster: RouteGroupVersion: port %d out of range", opts.Port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
	defer cancel()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: opts.ServiceName, Namespace: opts.Namespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	services := c.AdminClientset(t).CoreV1().Services(opts.Namespace)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = services.Create(ctx, svc, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		old.Spec = svc.Spec
		_, err = services.Update(ctx, old, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("kubecluster: ExternalName Service %s/%s: %v", opts.Namespace, opts.ServiceName, err)
	}
	name := apiServiceName(opts.Version)
	c.updateAPIService(t, ctx, name, func(obj *unstructured.Unstructured) error {
		labels := obj.GetLabels()
		delete(labels, automanagedLabel)
		obj.SetLabels(labels)
		spec := map[string]any{
			"group":                "coordination.k8s.io",
			"version":              opts.Version,
			"groupPriorityMinimum": int64(builtinGroupPriority),
			"versionPriority":      builtinVersionPriorities[opts.Version],
			"service":              map[string]any{"name": opts.ServiceName, "namespace": opts.Namespace, "port": int64(opts.Port)},
		}
		if len(opts.CABundle) > 0 {
			spec["caBundle"] = base64.StdEncoding.EncodeToString(opts.CABundle) // []byte in the API: base64 in JSON
		}
		return unstructured.SetNestedField(obj.Object, spec, "spec")
	})
	c.waitAPIService(t, ctx, name, "Passed", func(obj *unstructured.Unstructured) bool {
		port, _, _ := unstructured.NestedInt64(obj.Object, "spec", "service", "port")
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name")
		return port == int64(opts.Port) && name == opts.ServiceName
	})
}

// RouteLocal gives coordination.k8s.io/v1 back to kube-apiserver's
// built-in storage (etcd): the APIService as kube-apiserver registers it
// itself (no spec.service, priorities 16500/15, label automanaged=onstart),
// and waits until it is Available=True with reason Local. The Service
// RouteGroupVersion created is left in place.
func (c *Cluster) RouteLocal(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
	defer cancel()
	c.updateAPIService(t, ctx, LeaseAPIService, func(obj *unstructured.Unstructured) error {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[automanagedLabel] = "onstart"
		obj.SetLabels(labels)
		return unstructured.SetNestedField(obj.Object, map[string]any{
			"group":                "coordination.k8s.io",
			"version":              "v1",
			"groupPriorityMinimum": int64(builtinGroupPriority),
			"versionPriority":      int64(builtinVersionPrio),
		}, "spec")
	})
	c.waitAPIService(t, ctx, LeaseAPIService, "Local", func(obj *unstructured.Unstructured) bool {
		_, found, _ := unstructured.NestedMap(obj.Object, "spec", "service")
		return !found
	})
}

// APIService returns the APIService v1.coordination.k8s.io as stored.
func (c *Cluster) APIService(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj, err := c.dynamic(t).Resource(apiServiceResource).Get(ctx, LeaseAPIService, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kubecluster: get APIService %s: %v", LeaseAPIService, err)
	}
	return obj
}

func (c *Cluster) dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(c.RESTConfig(t, c.AdminKubeconfig))
	if err != nil {
		t.Fatalf("kubecluster: dynamic client: %v", err)
	}
	return d
}

// updateAPIService applies mutate to the current APIService and writes it,
// again on a conflict (kube-apiserver's controllers write its status).
func (c *Cluster) updateAPIService(t testing.TB, ctx context.Context, name string, mutate func(*unstructured.Unstructured) error) {
	t.Helper()
	client := c.dynamic(t).Resource(apiServiceResource)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := mutate(obj); err != nil {
			return fmt.Errorf("edit: %w", err)
		}
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("kubecluster: update APIService %s: %v", name, err)
	}
}

// waitAPIService waits until the APIService matches (spec as written) and
// its Available condition is True with reason (Passed for a remote
// backend, Local for built-in storage): a stale True from before the
// update has the other reason.
func (c *Cluster) waitAPIService(t testing.TB, ctx context.Context, name, reason string, matches func(*unstructured.Unstructured) bool) {
	t.Helper()
	client := c.dynamic(t).Resource(apiServiceResource)
	var last string
	for {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			st, rs, msg := availableCondition(obj)
			last = fmt.Sprintf("Available=%s reason=%s message=%q", st, rs, msg)
			if matches(obj) && st == "True" && rs == reason {
				return
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kubecluster: APIService %s not Available with reason %s within %v; last: %s", name, reason, routeTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// availableCondition is the status, reason and message of the
// APIService's Available condition ("" when it has none).
func availableCondition(obj *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Available" {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
	}
	return status, reason, message
}

// IssueServingCert issues a serving certificate for an aggregated server
// (the backend of RouteGroupVersion) with dnsNames and ips as SANs, signed
// by a CA of its own whose PEM is caPEM: the APIService's caBundle. The
// names must include RouteOptions.ServerName(), the name kube-apiserver
// checks; add "localhost" and 127.0.0.1 for clients that dial the backend
// directly.
func (c *Cluster) IssueServingCert(t testing.TB, dnsNames []string, ips []net.IP) (certFile, keyFile string, caPEM []byte) {
	t.Helper()
	c.mu.Lock()
	c.counter++
	name := fmt.Sprintf("serving-%d", c.counter)
	c.mu.Unlock()
	certFile, keyFile, err := c.servingCA.issueFiles(filepath.Join(c.Dir, "pki"), name, leaf{
		cn: firstOr(dnsNames, "aggregated-server"), dns: dnsNames, ips: ips, usages: serverUsage,
	})
	if err != nil {
		t.Fatalf("kubecluster: serving certificate: %v", err)
	}
	return certFile, keyFile, append([]byte(nil), c.servingCA.certPEM...)
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}
