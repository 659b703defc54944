package objects

import (
	"bytes"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/served"
)

// TestWithResourceVersionMatchesSerializer checks the splice against the
// serializer itself: for objects whose metadata and whole encoding straddle
// the sizes where a length prefix gains a byte (127/128 and 16383/16384),
// and revisions of every digit count, the spliced stored encoding is the
// encoding of the object with that resourceVersion, byte for byte.
func TestWithResourceVersionMatchesSerializer(t *testing.T) {
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	encode := func(obj runtime.Object) []byte {
		var b bytes.Buffer
		if err := pb.Encode(obj, &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var objects []metav1.Object
	for _, nameLen := range []int{1, 40, 60, 70, 80, 90, 100, 110, 120} {
		for _, fieldsLen := range []int{0, 1, 16300, 16330, 16360} {
			l := &coordinationv1.Lease{
				TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
				ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("n", nameLen), Namespace: "kube-node-lease", UID: "6a1b4c0e-9b0d-4f8e-8a55-0a4f6f0c1d2e"},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node"), LeaseDurationSeconds: ptr.To[int32](40)},
			}
			if fieldsLen > 0 {
				l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:x":"` + strings.Repeat("v", fieldsLen) + `"}`)}}
			}
			objects = append(objects, l)
		}
	}
	objects = append(objects, &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"a": "b"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	})
	rvs := []string{"1", "9", "10", "127", "128", "1000000", "9223372036854775807"}
	for i, obj := range objects {
		obj.SetResourceVersion("")
		stored := encode(obj.(runtime.Object))
		for _, rv := range rvs {
			obj.SetResourceVersion(rv)
			want := encode(obj.(runtime.Object))
			prefix := []byte("kept")
			got, ok := WithResourceVersion(prefix, stored, rv)
			if !ok {
				t.Fatalf("object %d, rv %s: splice refused", i, rv)
			}
			if !bytes.Equal(got[:4], []byte("kept")) || !bytes.Equal(got[4:], want) {
				t.Fatalf("object %d (%d bytes stored), rv %s: spliced\n%x\nwant\n%x", i, len(stored), rv, got[4:], want)
			}
		}
	}

	// What is not a stored encoding with an empty resourceVersion is refused.
	l := objects[0]
	l.SetResourceVersion("5")
	withRV := encode(l.(runtime.Object))
	for name, data := range map[string][]byte{
		"resourceVersion already set": withRV,
		"no envelope":                 withRV[4:],
		"truncated":                   withRV[:len(withRV)-3],
		"empty":                       nil,
	} {
		if got, ok := WithResourceVersion([]byte("kept"), data, "6"); ok || string(got) != "kept" {
			t.Errorf("%s: spliced (%v) or changed dst (%q)", name, ok, got)
		}
	}
}
