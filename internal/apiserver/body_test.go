package apiserver

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/lease"
	"github.com/leasehold/leasehold/internal/registry/node"
	"github.com/leasehold/leasehold/internal/served"
)

func TestReadBodyAgainstContentLength(t *testing.T) {
	big := strings.Repeat("x", MaxRequestBodyBytes+10)
	cases := map[string]struct {
		body          io.Reader
		contentLength int64
		want          string
		wantCode      int32
	}{
		"exact":                      {strings.NewReader("hello"), 5, "hello", 0},
		"in one-byte reads":          {iotest.OneByteReader(strings.NewReader("hello")), 5, "hello", 0},
		"longer than announced":      {strings.NewReader("hello world"), 5, "hello world", 0},
		"unannounced":                {strings.NewReader("hello"), -1, "hello", 0},
		"shorter than announced":     {strings.NewReader("hel"), 5, "", 400},
		"announced over the limit":   {strings.NewReader("x"), MaxRequestBodyBytes + 1, "", 413},
		"grows past the limit":       {strings.NewReader(big), 5, "", 413},
		"unannounced over the limit": {strings.NewReader(big), -1, "", 413},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", "/", tc.body)
			r.ContentLength = tc.contentLength
			got, err := readBody(r)
			if tc.wantCode != 0 {
				var st apierrors.APIStatus
				if !errors.As(err, &st) || st.Status().Code != tc.wantCode {
					t.Fatalf("got %v, want a %d", err, tc.wantCode)
				}
				return
			}
			if err != nil || !bytes.Equal(got, []byte(tc.want)) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if tc.contentLength == int64(len(tc.want)) && cap(got) != len(got) {
				t.Errorf("an announced body got a buffer of %d bytes for %d", cap(got), len(got))
			}
		})
	}
}

// Write request bodies are read into recycled buffers (byteBuffers), which
// is only safe if a decoded object shares no memory with its body: scribble
// over the body after decoding, in every media type a client may send, and
// the object must not change.
func TestDecodedObjectsShareNothingWithTheBody(t *testing.T) {
	leases, nodes := lease.Resource(time.Now), node.Resource(time.Now)
	set := registry.NewSet(leases, nodes)
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Resources: set, Scheme: scheme, Authorizer: allowEverything{}})
	if err != nil {
		t.Fatal(err)
	}
	holder, duration, now := "n1", int32(40), metav1.NewMicroTime(time.Now())
	objs := map[*registry.Resource]runtime.Object{
		leases: &coordinationv1.Lease{
			TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", UID: "lease-uid",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "agent", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{}}}`)}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
		},
		nodes: &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"},
				Annotations: map[string]string{"note": "some text"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Ready", Message: "posting"}},
			},
		},
	}
	for res, obj := range objs {
		for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf} {
			info, ok := s.neg.SerializerFor(mediaType)
			if !ok {
				t.Fatalf("no serializer for %s", mediaType)
			}
			var body bytes.Buffer
			if err := info.Serializer.Encode(obj, &body); err != nil {
				t.Fatal(err)
			}
			decoded, _, err := s.decodeObject(res, info, body.Bytes(), validationStrict)
			if err != nil {
				t.Fatalf("%s in %s: %v", res.Kind, mediaType, err)
			}
			want := decoded.DeepCopyObject()
			scribble := body.Bytes()
			for i := range scribble {
				scribble[i] = 'x'
			}
			if !apiequality.Semantic.DeepEqual(decoded, want) {
				t.Errorf("%s in %s: the decoded object changed with its body", res.Kind, mediaType)
			}
		}
	}
}

// A body that fits the recycled buffer is read into its memory; one that
// does not gets its own.
func TestReadBodyIntoReusesTheBuffer(t *testing.T) {
	buf := make([]byte, 0, 16)
	r := httptest.NewRequest("PUT", "/", strings.NewReader("hello"))
	got, err := readBodyInto(r, buf)
	if err != nil || string(got) != "hello" || &got[0] != &buf[:1][0] {
		t.Fatalf("got %q, %v; reused the buffer: %v", got, err, err == nil && &got[0] == &buf[:1][0])
	}
	r = httptest.NewRequest("PUT", "/", strings.NewReader(strings.Repeat("x", 17)))
	if got, err = readBodyInto(r, buf); err != nil || len(got) != 17 {
		t.Fatalf("got %q, %v", got, err)
	}
}
