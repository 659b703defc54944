package apiserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// bodyTypes are the Content-Types the body fuzzers pick from by index: the
// three encodings the server decodes, a parameterised one, and ones it must
// refuse with 415.
var bodyTypes = []string{
	"application/json",
	"application/yaml",
	"application/vnd.kubernetes.protobuf",
	"application/json; charset=utf-8",
	"application/cbor",
	"text/plain",
	"",
}

// acceptFor answers in the body's own encoding when it has one.
func acceptFor(contentType string) string {
	switch contentType {
	case "application/json", "application/yaml", "application/vnd.kubernetes.protobuf":
		return contentType
	}
	return ""
}

// fieldValidations are the fieldValidation values the body fuzzers pick from.
var fieldValidations = []string{"", "Strict", "Warn", "Ignore", "bogus"}

func pick[T any](xs []T, i uint8) T { return xs[int(i)%len(xs)] }

// seedLease is a valid Lease with every spec field set.
func seedLease(name string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC))
	return &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"app": "fuzz", "tier": "seed"},
			Annotations: map[string]string{"note": "seed"},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("holder-a"),
			LeaseDurationSeconds: ptr.To[int32](40),
			AcquireTime:          &now,
			RenewTime:            &now,
			LeaseTransitions:     ptr.To[int32](3),
		},
	}
}

// encode writes obj in the media type's encoding, as client-go would.
func encode(tb testing.TB, mediaType string, obj runtime.Object) []byte {
	tb.Helper()
	info, ok := runtime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	enc := clientscheme.Codecs.EncoderForVersion(info.Serializer, coordinationv1.SchemeGroupVersion)
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		tb.Fatalf("encoding %s: %v", mediaType, err)
	}
	return buf.Bytes()
}

// leaseBodies are seed bodies for name in each encoding: valid, with
// generateName, with an unknown field, of the wrong version, truncated.
func leaseBodies(tb testing.TB, name string) map[string][][]byte {
	tb.Helper()
	out := map[string][][]byte{}
	for _, mt := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"} {
		valid := encode(tb, mt, seedLease(name))
		gen := seedLease("")
		gen.GenerateName = name + "-"
		out[mt] = append(out[mt], valid, encode(tb, mt, gen), valid[:len(valid)/2])
	}
	out["application/json"] = append(out["application/json"],
		[]byte(fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q},"spec":{"holderIdentity":"x","bogus":1}}`, name)),
		[]byte(fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1beta1","kind":"Lease","metadata":{"name":%q}}`, name)),
		[]byte(fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q,"resourceVersion":"1"},"spec":{"leaseDurationSeconds":-1}}`, name)),
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`),
		[]byte(`null`),
	)
	out["application/yaml"] = append(out["application/yaml"],
		[]byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: "+name+"\nspec:\n  holderIdentity: &a x\n  renewTime: *a\n"))
	return out
}

// roundTrip checks that a GET of want's name returns what the write
// answered: the store and the cache hold the acknowledged object.
func (s *fuzzServer) roundTrip(t testing.TB, what string, want *coordinationv1.Lease) {
	t.Helper()
	resp := s.do(t, fuzzRequest{
		method: http.MethodGet,
		path:   fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", want.Namespace, want.Name),
		accept: "application/json",
	})
	if resp.code != http.StatusOK {
		t.Fatalf("%s answered %s/%s, but a GET of it answers %d: %s", what, want.Namespace, want.Name, resp.code, truncate(resp.body))
	}
	got := s.lease(t, "GET after "+what, resp)
	// The GET answers in JSON, which cannot carry everything protobuf can
	// (a present but zero renewTime is null, so it reads back as absent, in
	// Kubernetes too): compare with what the write answered as JSON has it.
	want = viaJSON(t, want)
	if !apiequality.Semantic.DeepEqual(got.ObjectMeta, want.ObjectMeta) || !apiequality.Semantic.DeepEqual(got.Spec, want.Spec) {
		t.Fatalf("%s answered\n%+v\n%+v\nbut a GET returns\n%+v\n%+v", what, want.ObjectMeta, want.Spec, got.ObjectMeta, got.Spec)
	}
}

// ensureLease makes sure name exists (a fuzzed write may have changed it,
// never deleted it) and returns it.
func (s *fuzzServer) ensureLease(t testing.TB, name string) {
	t.Helper()
	get := s.do(t, fuzzRequest{method: http.MethodGet, path: leasesPath + "/" + name, accept: "application/json"})
	if get.code == http.StatusOK {
		return
	}
	resp := s.do(t, fuzzRequest{
		method: http.MethodPost, path: leasesPath,
		contentType: "application/json", body: encode(t, "application/json", seedLease(name)),
	})
	if resp.code != http.StatusCreated {
		t.Fatalf("creating %s: %d %s", name, resp.code, truncate(resp.body))
	}
}

// viaJSON is l after a JSON round trip.
func viaJSON(t testing.TB, l *coordinationv1.Lease) *coordinationv1.Lease {
	t.Helper()
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatalf("encoding %s as JSON: %v", l.Name, err)
	}
	out := &coordinationv1.Lease{}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %s from JSON: %v", l.Name, err)
	}
	return out
}
