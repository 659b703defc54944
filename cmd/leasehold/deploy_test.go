package main

// deploy_test.go checks the manifests under deploy/: each decodes with
// client-go's scheme (the APIService, whose types client-go lacks, as
// plain YAML), and the names, ports, labels and flags they share agree
// with each other and with serve's own flags.

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// clusterModeFlags are serve's flags that put it behind a cluster: each
// names a kubeconfig the manifests' ConfigMap holds.
var clusterModeFlags = []string{"authentication-kubeconfig", "authorization-kubeconfig"}

// manifests is every object under deploy/, by kind.
type manifests struct {
	serviceAccounts []*corev1.ServiceAccount
	configMaps      []*corev1.ConfigMap
	services        []*corev1.Service
	slices          []*discoveryv1.EndpointSlice
	statefulSets    []*appsv1.StatefulSet
	clusterRoles    []*rbacv1.ClusterRole
	crbs            []*rbacv1.ClusterRoleBinding
	rbs             []*rbacv1.RoleBinding
	apiServices     map[string]map[string]any // file name -> object
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{apiServices: map[string]map[string]any{}}
	decode := scheme.Codecs.UniversalDeserializer()
	err := filepath.WalkDir("../../deploy", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var head struct{ Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if head.Kind == "APIService" {
				var obj map[string]any
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				m.apiServices[filepath.Base(path)] = obj
				continue
			}
			obj, _, err := decode.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: decoding with client-go's scheme: %v", path, err)
			}
			if !m.add(obj) {
				t.Fatalf("%s: unexpected kind %T", path, obj)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *manifests) add(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		m.serviceAccounts = append(m.serviceAccounts, o)
	case *corev1.ConfigMap:
		m.configMaps = append(m.configMaps, o)
	case *corev1.Service:
		m.services = append(m.services, o)
	case *discoveryv1.EndpointSlice:
		m.slices = append(m.slices, o)
	case *appsv1.StatefulSet:
		m.statefulSets = append(m.statefulSets, o)
	case *rbacv1.ClusterRole:
		m.clusterRoles = append(m.clusterRoles, o)
	case *rbacv1.ClusterRoleBinding:
		m.crbs = append(m.crbs, o)
	case *rbacv1.RoleBinding:
		m.rbs = append(m.rbs, o)
	default:
		return false
	}
	return true
}

func one[T any](t *testing.T, what string, list []T) T {
	t.Helper()
	if len(list) != 1 {
		t.Fatalf("want exactly one %s under deploy/, have %d", what, len(list))
	}
	return list[0]
}

func TestDeployManifests(t *testing.T) {
	m := loadManifests(t)
	sa := one(t, "ServiceAccount", m.serviceAccounts)
	svc := one(t, "Service", m.services)
	slice := one(t, "EndpointSlice", m.slices)
	sts := one(t, "StatefulSet", m.statefulSets)
	cm := one(t, "ConfigMap", m.configMaps)
	for _, ns := range []string{sa.Namespace, svc.Namespace, slice.Namespace, sts.Namespace, cm.Namespace} {
		if ns != "kube-system" {
			t.Errorf("namespaced object in %q, want kube-system", ns)
		}
	}

	t.Run("rbac", func(t *testing.T) { checkRBAC(t, m, sa) })
	t.Run("service", func(t *testing.T) { checkService(t, svc, slice, sts) })
	t.Run("statefulset", func(t *testing.T) { checkStatefulSet(t, sts, sa, svc, cm) })
	t.Run("apiservice", func(t *testing.T) { checkAPIServices(t, m.apiServices, svc) })
}

// boundTo reports whether subjects name the service account.
func boundTo(subjects []rbacv1.Subject, sa *corev1.ServiceAccount) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == "ServiceAccount" && s.Name == sa.Name && s.Namespace == sa.Namespace
	})
}

func checkRBAC(t *testing.T, m *manifests, sa *corev1.ServiceAccount) {
	want := map[string]bool{"system:auth-delegator": false}
	for _, crb := range m.crbs {
		if !boundTo(crb.Subjects, sa) {
			t.Errorf("ClusterRoleBinding %s does not bind %s/%s", crb.Name, sa.Namespace, sa.Name)
		}
		want[crb.RoleRef.Name] = true
	}
	if !want["system:auth-delegator"] {
		t.Error("no ClusterRoleBinding to system:auth-delegator")
	}
	rb := one(t, "RoleBinding", m.rbs)
	if rb.Namespace != "kube-system" || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "extension-apiserver-authentication-reader" || !boundTo(rb.Subjects, sa) {
		t.Errorf("RoleBinding %s/%s: want kube-system's extension-apiserver-authentication-reader Role bound to the service account", rb.Namespace, rb.Name)
	}
	cr := one(t, "ClusterRole", m.clusterRoles)
	if !want[cr.Name] {
		t.Errorf("ClusterRole %s is bound by no ClusterRoleBinding", cr.Name)
	}
	readable := map[string]bool{}
	for _, r := range cr.Rules {
		if slices.Contains(r.Verbs, "get") && slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					readable[g+"/"+res] = true
				}
			}
		}
	}
	for _, res := range []string{"/namespaces", "rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings",
		"rbac.authorization.k8s.io/clusterroles", "rbac.authorization.k8s.io/clusterrolebindings"} {
		if !readable[res] {
			t.Errorf("ClusterRole %s cannot get, list and watch %s", cr.Name, res)
		}
	}
}

func checkService(t *testing.T, svc *corev1.Service, slice *discoveryv1.EndpointSlice, sts *appsv1.StatefulSet) {
	if len(svc.Spec.Selector) != 0 {
		t.Errorf("Service %s has a selector; its endpoints would depend on kube-controller-manager", svc.Name)
	}
	if slice.Labels[discoveryv1.LabelServiceName] != svc.Name {
		t.Errorf("EndpointSlice %s is labelled for Service %q, want %q", slice.Name, slice.Labels[discoveryv1.LabelServiceName], svc.Name)
	}
	if mb := slice.Labels[discoveryv1.LabelManagedBy]; mb == "" || mb == "endpointslice-controller.k8s.io" || mb == "endpointslicemirroring-controller.k8s.io" {
		t.Errorf("EndpointSlice managed-by %q: want a manager no controller claims", mb)
	}
	sp := one(t, "Service port", svc.Spec.Ports)
	ep := one(t, "EndpointSlice port", slice.Ports)
	if ep.Name == nil || *ep.Name != sp.Name || ep.Port == nil {
		t.Fatalf("EndpointSlice port %v does not carry the Service port's name %q", ep.Name, sp.Name)
	}
	if sp.TargetPort != intstr.FromInt32(*ep.Port) {
		t.Errorf("Service targetPort %v, EndpointSlice port %d", sp.TargetPort.String(), *ep.Port)
	}
	e := one(t, "endpoint", slice.Endpoints)
	if e.Conditions.Ready == nil || !*e.Conditions.Ready {
		t.Error("the endpoint is not ready: the aggregator's availability check would fail")
	}
	c := one(t, "container", sts.Spec.Template.Spec.Containers)
	port := one(t, "container port", c.Ports)
	if port.ContainerPort != *ep.Port {
		t.Errorf("container port %d, EndpointSlice port %d", port.ContainerPort, *ep.Port)
	}
	if e.NodeName == nil || *e.NodeName != sts.Spec.Template.Spec.NodeSelector[corev1.LabelHostname] {
		t.Errorf("endpoint node %v is not the node the pod is pinned to (%q)", e.NodeName, sts.Spec.Template.Spec.NodeSelector[corev1.LabelHostname])
	}
}

func checkStatefulSet(t *testing.T, sts *appsv1.StatefulSet, sa *corev1.ServiceAccount, svc *corev1.Service, cm *corev1.ConfigMap) {
	spec := sts.Spec.Template.Spec
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Error("want 1 replica")
	}
	if sts.Spec.ServiceName != svc.Name {
		t.Errorf("serviceName %q, Service %q", sts.Spec.ServiceName, svc.Name)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not select the pod template", k, v)
		}
	}
	if spec.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName %q, ServiceAccount %q", spec.ServiceAccountName, sa.Name)
	}
	if !spec.HostNetwork || spec.PriorityClassName != "system-cluster-critical" {
		t.Error("want hostNetwork and priorityClassName system-cluster-critical")
	}
	if _, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
		t.Error("no control-plane nodeSelector")
	}
	tolerated := map[string]bool{}
	for _, tol := range spec.Tolerations {
		if tol.Operator == corev1.TolerationOpExists && tol.TolerationSeconds == nil {
			tolerated[tol.Key+":"+string(tol.Effect)] = true
		}
	}
	for _, k := range []string{"node-role.kubernetes.io/control-plane:NoSchedule", "node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute"} {
		if !tolerated[k] {
			t.Errorf("no lasting toleration of %s", k)
		}
	}
	c := one(t, "container", spec.Containers)
	flags := checkServeArgs(t, c.Args)
	port := one(t, "container port", c.Ports)
	if flags["secure-port"] != itoa(port.ContainerPort) {
		t.Errorf("--secure-port %s, container port %d", flags["secure-port"], port.ContainerPort)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port != intstr.FromString(port.Name) {
			t.Errorf("%s probe: want HTTPS GET on port %q", name, port.Name)
		}
	}
	if c.LivenessProbe.HTTPGet.Path != "/livez" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("want liveness on /livez and readiness on /readyz")
	}

	mounts := map[string]string{} // path -> volume
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	claim := one(t, "volumeClaimTemplate", sts.Spec.VolumeClaimTemplates)
	if mounts[flags["data-dir"]] != claim.Name {
		t.Errorf("--data-dir %s is not the claim %q's mount", flags["data-dir"], claim.Name)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes[mounts[flags["ca-dir"]]]; v.Secret == nil {
		t.Errorf("--ca-dir %s is not a Secret's mount", flags["ca-dir"])
	}
	for _, f := range clusterModeFlags {
		dir, file := filepath.Split(flags[f])
		v := volumes[mounts[filepath.Clean(dir)]]
		if v.ConfigMap == nil || v.ConfigMap.Name != cm.Name || cm.Data[file] == "" {
			t.Errorf("--%s %s is not a key of ConfigMap %s", f, flags[f], cm.Name)
		}
	}
	if _, err := clientcmd.Load([]byte(cm.Data["kubeconfig"])); err != nil {
		t.Errorf("ConfigMap %s: kubeconfig does not load: %v", cm.Name, err)
	}
	if !slices.Contains(strings.Split(flags["tls-san"], ","), svc.Name+"."+svc.Namespace+".svc") {
		t.Errorf("--tls-san %q lacks %s.%s.svc, the name kube-apiserver verifies", flags["tls-san"], svc.Name, svc.Namespace)
	}
}

// checkServeArgs checks that args run serve with flags serve has, and
// returns them by name.
func checkServeArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("container args %q do not run serve", args)
	}
	serve := newServeCmd().Flags()
	flags := map[string]string{}
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("arg %q: want --flag=value", a)
			continue
		}
		if serve.Lookup(name) == nil {
			t.Errorf("serve has no flag --%s", name)
		}
		flags[name] = value
	}
	return flags
}

func checkAPIServices(t *testing.T, objs map[string]map[string]any, svc *corev1.Service) {
	for file, obj := range objs {
		if str(obj, "apiVersion") != "apiregistration.k8s.io/v1" || str(obj, "metadata", "name") != "v1.coordination.k8s.io" ||
			str(obj, "spec", "group") != "coordination.k8s.io" || str(obj, "spec", "version") != "v1" ||
			num(obj, "spec", "groupPriorityMinimum") != 16500 || num(obj, "spec", "versionPriority") != 15 {
			t.Errorf("%s: want APIService v1.coordination.k8s.io with the built-in priorities 16500/15", file)
		}
	}
	remote, local := objs["leasehold.yaml"], objs["local.yaml"]
	if remote == nil || local == nil {
		t.Fatalf("want deploy/apiservice/leasehold.yaml and local.yaml, have %d APIServices", len(objs))
	}
	if str(remote, "spec", "service", "name") != svc.Name || str(remote, "spec", "service", "namespace") != svc.Namespace ||
		num(remote, "spec", "service", "port") != float64(svc.Spec.Ports[0].Port) {
		t.Errorf("leasehold.yaml does not point at Service %s/%s port %d", svc.Namespace, svc.Name, svc.Spec.Ports[0].Port)
	}
	if str(remote, "spec", "caBundle") == "" || dig(remote, "spec", "insecureSkipTLSVerify") == true {
		t.Error("leasehold.yaml must verify Leasehold with a caBundle")
	}
	if dig(remote, "metadata", "labels", "kube-aggregator.kubernetes.io/automanaged") != nil {
		t.Error("leasehold.yaml carries the automanaged label: kube-apiserver would revert it on restart")
	}
	if dig(local, "spec", "service") != nil || str(local, "metadata", "labels", "kube-aggregator.kubernetes.io/automanaged") != "onstart" {
		t.Error("local.yaml: want no service and the automanaged=onstart label, as kube-apiserver registers it")
	}
}

func dig(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(obj map[string]any, path ...string) string { s, _ := dig(obj, path...).(string); return s }
func num(obj map[string]any, path ...string) float64 {
	n, _ := dig(obj, path...).(float64)
	return n
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
