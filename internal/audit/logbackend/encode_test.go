package logbackend

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// encodingJSON is what the backend wrote before appendEvent: the reference.
func encodingJSON(t testing.TB, ev *auditv1.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(ev); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkSame(t *testing.T, name string, ev *auditv1.Event) {
	t.Helper()
	got, err := appendEvent(nil, ev)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if want := encodingJSON(t, ev); !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

func TestAppendEventIsEncodingJSON(t *testing.T) {
	// The seed's events, every field kube-apiserver writes.
	seeds, err := filepath.Glob("../testdata/seed-*.json")
	if err != nil || len(seeds) == 0 {
		t.Fatalf("seed events: %v (%d files)", err, len(seeds))
	}
	for _, f := range seeds {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev auditv1.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkSame(t, filepath.Base(f), &ev)
	}
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 14, 0, 0, 123456789, time.FixedZone("x", 3600)))
	full := &auditv1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:    auditv1.LevelRequestResponse, AuditID: "id", Stage: auditv1.StagePanic,
		RequestURI: "/api?x=<&>", Verb: "get",
		User: authnv1.UserInfo{Username: "u\u2028\"\\", UID: "1", Groups: []string{"a", ""},
			Extra: map[string]authnv1.ExtraValue{"b": {"x"}, "a": nil, "c": {}}},
		ImpersonatedUser:       &authnv1.UserInfo{Username: "imp"},
		AuthenticationMetadata: &auditv1.AuthenticationMetadata{ImpersonationConstraint: "impersonate:user-info"},
		SourceIPs:              []string{"127.0.0.1", "::1"}, UserAgent: "ua\x01\t\n\r\b\f\x7f\xff",
		ObjectRef: &auditv1.ObjectReference{Resource: "leases", Namespace: "n", Name: "x", UID: "u", APIGroup: "g",
			APIVersion: "v1", ResourceVersion: "9", Subresource: "status"},
		ResponseStatus: &metav1.Status{Status: metav1.StatusFailure, Message: "m", Reason: metav1.StatusReasonNotFound,
			Details: &metav1.StatusDetails{Name: "x", Kind: "leases"}, Code: 404},
		RequestObject:            &runtime.Unknown{Raw: []byte(`{"a": [1, 2]}`), ContentType: runtime.ContentTypeJSON},
		ResponseObject:           &runtime.Unknown{Raw: []byte(`{"kind":"Status"}`), ContentType: runtime.ContentTypeJSON},
		RequestReceivedTimestamp: at, StageTimestamp: at,
		Annotations: map[string]string{"z": "1", "authorization.k8s.io/decision": "allow", "": "<>"},
	}
	checkSame(t, "every field", full)
	checkSame(t, "empty", &auditv1.Event{})
	checkSame(t, "code only", &auditv1.Event{ResponseStatus: &metav1.Status{Code: 200}, ObjectRef: &auditv1.ObjectReference{}})
	checkSame(t, "status without code", &auditv1.Event{ResponseStatus: &metav1.Status{}})
	checkSame(t, "renewal", event(7, 10))
}

// FuzzAppendEvent: whatever the strings, the line is encoding/json's.
func FuzzAppendEvent(f *testing.F) {
	for _, s := range []string{"", "a", "<tag>&", "\u2028\u2029", "\xff\xfe", "é\x00\"\\", "\U0001F600"} {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ev := &auditv1.Event{Level: auditv1.Level(a), AuditID: "x", RequestURI: b, Verb: c,
			User:      authnv1.UserInfo{Username: a, Groups: []string{b, c}, Extra: map[string]authnv1.ExtraValue{a: {b}, c: {a}}},
			SourceIPs: []string{c}, UserAgent: b,
			ObjectRef:   &auditv1.ObjectReference{Name: a, Namespace: b, Subresource: c},
			Annotations: map[string]string{a: b, b: c, c: a},
		}
		checkSame(t, "fuzzed", ev)
	})
}

// BenchmarkEncode encodes the seed's renewal event at Metadata level (its
// request body left out).
func BenchmarkEncode(b *testing.B) {
	data, err := os.ReadFile("../testdata/seed-lease-update.json")
	if err != nil {
		b.Fatal(err)
	}
	ev := &auditv1.Event{}
	if err := json.Unmarshal(data, ev); err != nil {
		b.Fatal(err)
	}
	ev.Level, ev.RequestObject, ev.ResponseObject = auditv1.LevelMetadata, nil, nil
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(ev)
		}
	})
	b.Run("appendEvent", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = appendEvent(buf[:0], ev)
		}
	})
}
