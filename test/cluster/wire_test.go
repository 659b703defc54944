package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// wireDetails checks what the cluster's own clients send through the
// aggregator: protobuf bodies, PartialObjectMetadata lists and watches
// (the garbage collector's and namespace controller's metadata
// informers), delete with a uid precondition, deletecollection, and the
// aggregated discovery kube-apiserver builds from Leasehold's.
func wireDetails(t *testing.T, b *behind) {
	ctx := context.Background()
	cfg := b.kc.RESTConfig(t, b.kc.AdminKubeconfig)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	proto, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "wire"
	if _, err := b.kc.Kubectl(t, "", "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	var created *coordinationv1.Lease
	testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "protobuf create", func() error {
		created, err = proto.CoordinationV1().Leases(ns).Create(ctx, lease("proto", "p"), metav1.CreateOptions{})
		return err
	})
	if _, err := proto.CoordinationV1().Leases(ns).Create(ctx, lease("second", "s"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	meta, err := metadata.NewForConfig(b.kc.RESTConfig(t, b.kc.AdminKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	leases := meta.Resource(coordinationv1.SchemeGroupVersion.WithResource("leases"))
	list, err := leases.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Kind != "PartialObjectMetadata" && list.Items[0].Name == "" {
		t.Fatalf("metadata list: %+v, %v", list, err)
	}
	w, err := leases.Namespace(nodeLeaseNS).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("metadata watch: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type == watch.Error {
			t.Errorf("metadata watch event: %+v", ev.Object)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("metadata watch: no event within 15 s while agents renew every 2 s")
	}
	w.Stop()

	wrong := types.UID("not-its-uid")
	if err := proto.CoordinationV1().Leases(ns).Delete(ctx, "proto", uidPrecondition(wrong)); !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong uid precondition: %v, want 409", err)
	}
	if err := proto.CoordinationV1().Leases(ns).Delete(ctx, "proto", uidPrecondition(created.UID)); err != nil {
		t.Errorf("delete with its uid precondition: %v", err)
	}
	bg := metav1.DeletePropagationBackground
	if err := meta.Resource(coordinationv1.SchemeGroupVersion.WithResource("leases")).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil {
		t.Errorf("deletecollection: %v", err)
	}
	if l, err := b.direct.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("after deletecollection: %v, %v", l, err)
	}

	// Aggregated discovery: kube-apiserver's /apis lists Leasehold's
	// leases as current, not stale.
	raw, err := b.viaCluster.Discovery().RESTClient().Get().AbsPath("/apis").
		SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var groups apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatal(err)
	}
	if err := findLeases(&groups); err != nil {
		t.Errorf("aggregated discovery: %v", err)
	}
	out, err := b.kc.Kubectl(t, "", "api-resources", "--api-group", "coordination.k8s.io")
	if err != nil || !strings.Contains(out, "leases") {
		t.Errorf("kubectl api-resources: %v\n%s", err, out)
	}
	// kubectl explain reads kube-apiserver's OpenAPI v3, which it builds
	// from Leasehold's /openapi/v3 for the routed group.
	out, err = b.kc.Kubectl(t, "", "explain", "lease.spec.holderIdentity")
	if err != nil || !strings.Contains(out, "holderIdentity contains the identity of the holder") {
		t.Errorf("kubectl explain through kube-apiserver's aggregated OpenAPI: %v\n%s", err, out)
	}
	raw, err = b.viaCluster.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil || !strings.Contains(string(raw), "io.k8s.api.coordination.v1.Lease") {
		t.Errorf("kube-apiserver's aggregated OpenAPI v2 lacks the Lease: %v", err)
	}
}

func findLeases(l *apidiscoveryv2.APIGroupDiscoveryList) error {
	for _, g := range l.Items {
		if g.Name != "coordination.k8s.io" {
			continue
		}
		for _, v := range g.Versions {
			if v.Version != "v1" {
				continue
			}
			if v.Freshness == apidiscoveryv2.DiscoveryFreshnessStale {
				return fmt.Errorf("coordination.k8s.io/v1 is Stale")
			}
			for _, r := range v.Resources {
				if r.Resource == "leases" {
					return nil
				}
			}
			return fmt.Errorf("coordination.k8s.io/v1 has no leases: %+v", v.Resources)
		}
	}
	return fmt.Errorf("no coordination.k8s.io/v1 in %d groups", len(l.Items))
}

// nodeConfinement: a node reads, renews and deletes only its own lease,
// whether through kube-apiserver (its Node authorizer, then Leasehold's
// NodeRestriction, since kube-apiserver admits nothing it proxies) or
// straight to Leasehold; a user the cluster's RBAC does not allow is
// refused, and allowed as soon as the cluster's RBAC says so.
func nodeConfinement(t *testing.T, b *behind) {
	ctx := context.Background()
	nodeKC := b.kc.NodeKubeconfig(t, "node-a")
	viaKAS := b.kc.Clientset(t, nodeKC)
	direct := b.kc.Clientset(t, b.leaseholdKubeconfigFor(t, nodeKC))
	const other = `can only access node lease with the same name as the requesting node`
	for via, c := range map[string]kubernetes.Interface{"through kube-apiserver": viaKAS, "straight to Leasehold": direct} {
		if _, err := c.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: node-a reads its own lease: %v", via, err)
		}
		_, err := c.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, "node-b", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:node:node-a" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"`) {
			t.Errorf("%s: node-a reads node-b's lease: %v, want 403", via, err)
		}
		if err := c.CoordinationV1().Leases(nodeLeaseNS).Delete(ctx, "node-b", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: node-a deletes node-b's lease: %v, want 403", via, err)
		}
		// A create passes the Node authorizer (the name is in the body);
		// only NodeRestriction, which Leasehold runs, stops it.
		_, err = c.CoordinationV1().Leases(nodeLeaseNS).Create(ctx, lease("node-c", "node-a"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), other) {
			t.Errorf("%s: node-a creates node-c's lease: %v, want NodeRestriction's 403", via, err)
		}
	}

	// A user with no RBAC at all, then a RoleBinding the cluster grants.
	userKC := b.kc.UserKubeconfig(t, "mallory")
	for via, c := range map[string]kubernetes.Interface{"through kube-apiserver": b.kc.Clientset(t, userKC), "straight to Leasehold": b.kc.Clientset(t, b.leaseholdKubeconfigFor(t, userKC))} {
		_, err := c.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "mallory" cannot list resource "leases"`) {
			t.Errorf("%s: mallory lists leases: %v, want 403", via, err)
		}
	}
	if _, err := b.kc.Kubectl(t, "", "create", "role", "lease-reader", "-n", "default", "--verb=get,list", "--resource=leases.coordination.k8s.io"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.kc.Kubectl(t, "", "create", "rolebinding", "mallory-reads-leases", "-n", "default", "--role=lease-reader", "--user=mallory"); err != nil {
		t.Fatal(err)
	}
	malloryDirect := b.kc.Clientset(t, b.leaseholdKubeconfigFor(t, userKC))
	testdeps.Eventually(t, 20*time.Second, 200*time.Millisecond, "the cluster's new RoleBinding allows mallory in Leasehold", func() error {
		_, err := malloryDirect.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
		return err
	})

	// A bearer token the cluster issued, reviewed by the cluster.
	if _, err := b.kc.Kubectl(t, "", "create", "serviceaccount", "token-user", "-n", "default"); err != nil {
		t.Fatal(err)
	}
	tok, err := b.kc.Kubectl(t, "", "create", "token", "token-user", "-n", "default")
	if err != nil {
		t.Fatal(err)
	}
	cfg := b.kc.RESTConfig(t, b.leaseholdKubeconfigFor(t, userKC))
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.BearerToken = strings.TrimSpace(tok)
	tc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tc.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:default:token-user" cannot list`) {
		t.Errorf("a service account token straight to Leasehold: %v, want it authenticated by TokenReview and refused by RBAC", err)
	}
}

// etcdGet returns the value at key in the cluster's etcd ("" when absent).
func etcdGet(t testing.TB, kc *kubecluster.Cluster, key string) string {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{kc.EtcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	if len(r.Kvs) == 0 {
		return ""
	}
	return string(r.Kvs[0].Value)
}
