package noderestriction

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// forbiddenLabels returns, sorted, the keys that differ between labels and
// old (added, changed or removed) and that a node may not touch: those under
// node-restriction.kubernetes.io (or a subdomain of it), and every other
// kubernetes.io or k8s.io key that is not a kubelet label. The kubelet's
// own list (k8s.io/kubelet) decides the latter, so the two cannot drift.
func forbiddenLabels(labels, old map[string]string) []string {
	bad := sets.New[string]()
	for k := range modifiedKeys(labels, old) {
		ns := labelNamespace(k)
		if inDomain(ns, corev1.LabelNamespaceNodeRestriction) {
			bad.Insert(k)
		}
		if (inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io")) && !kubeletapis.IsKubeletLabel(k) {
			bad.Insert(k)
		}
	}
	return sets.List(bad)
}

// modifiedKeys are the keys present in one map but not the other, or with
// different values.
func modifiedKeys(a, b map[string]string) sets.Set[string] {
	modified := sets.New[string]()
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			modified.Insert(k)
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			modified.Insert(k)
		}
	}
	return modified
}

// labelNamespace is the prefix of a label key before "/", or "".
func labelNamespace(key string) string {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return ns
}

// inDomain reports whether ns is domain or a subdomain of it.
func inDomain(ns, domain string) bool {
	return ns == domain || strings.HasSuffix(ns, "."+domain)
}
