package apiserver_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"
)

// TestProtobufUpdateAnswerIsTheEncodedObject checks that a protobuf update's
// answer, spliced from the stored encoding, is byte for byte what encoding
// the answered object gives, with the new resourceVersion, over renewals
// whose revisions gain digits.
func TestProtobufUpdateAnswerIsTheEncodedObject(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const ns = "kube-node-lease"
	createNamespace(t, h.api, ns)
	l := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: ns, Labels: map[string]string{"a": "b"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	l = renewOnce(t, h.api, pb, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases", l, http.StatusCreated)
	path := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/node-1"
	for i := range 120 { // revisions from one or two digits to three
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
		l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
		var body bytes.Buffer
		if err := pb.Encode(l, &body); err != nil {
			t.Fatal(err)
		}
		code, answer := do(h.api, http.MethodPut, path, "application/vnd.kubernetes.protobuf", body.Bytes())
		if code != http.StatusOK {
			t.Fatalf("renewal %d: %d %s", i, code, answer)
		}
		out := &coordinationv1.Lease{}
		if _, _, err := pb.Decode(answer, nil, out); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
		if out.ResourceVersion == "" || out.ResourceVersion == l.ResourceVersion || !out.Spec.RenewTime.Equal(l.Spec.RenewTime) {
			t.Fatalf("renewal %d: answered resourceVersion %q (sent %q), renewTime %v (sent %v)", i, out.ResourceVersion, l.ResourceVersion, out.Spec.RenewTime, l.Spec.RenewTime)
		}
		var want bytes.Buffer
		if err := pb.Encode(out, &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(answer, want.Bytes()) {
			t.Fatalf("renewal %d: answer\n%x\nis not the object's encoding\n%x", i, answer, want.Bytes())
		}
		l = out
	}
}
