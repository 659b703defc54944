package dashboard

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPagedListJoinsShrunkPages lists 1,200 Nodes in pages of 500: one
// list without a continue token, the first page's revision, every Node
// shrunk to its Ready condition, and each later page asked for with the
// token alone.
func TestPagedListJoinsShrunkPages(t *testing.T) {
	const total = 1200
	var asked []metav1.ListOptions
	list := func(_ context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
		asked = append(asked, o)
		start := 0
		if o.Continue != "" {
			start, _ = strconv.Atoi(o.Continue)
		}
		l := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
		for i := start; i < min(total, start+int(o.Limit)); i++ {
			n := node(fmt.Sprintf("n%04d", i), corev1.ConditionTrue)
			n.Status.NodeInfo.KernelVersion = "6.1"
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
			l.Items = append(l.Items, *n)
		}
		if end := start + int(o.Limit); end < total {
			l.Continue = strconv.Itoa(end)
			rem := int64(total - end)
			l.RemainingItemCount = &rem
		}
		return l, nil
	}
	got, err := pagedList(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}, list)
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*corev1.NodeList)
	if len(l.Items) != total || l.Continue != "" || l.RemainingItemCount != nil || l.ResourceVersion != "42" {
		t.Fatalf("%d items, continue %q, remaining %v, revision %q; want %d, none, none, 42", len(l.Items), l.Continue, l.RemainingItemCount, l.ResourceVersion, total)
	}
	for i, n := range l.Items {
		if n.Name != fmt.Sprintf("n%04d", i) || n.Status.NodeInfo.KernelVersion != "" || n.ManagedFields != nil || len(n.Status.Conditions) != 1 {
			t.Fatalf("item %d: %s with node info %+v, managed fields %v: want n%04d shrunk", i, n.Name, n.Status.NodeInfo, n.ManagedFields, i)
		}
	}
	if len(asked) != 3 || asked[0].ResourceVersion != "0" || asked[1].Continue != "500" || asked[1].ResourceVersion != "" || asked[2].Continue != "1000" {
		t.Errorf("pages asked for: %+v, want RV 0, then continue 500 and 1000 without a revision", asked)
	}
}
