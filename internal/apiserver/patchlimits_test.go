package apiserver_test

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leasePath creates namespace ns and lease name in it, and returns the
// lease's path.
func leasePath(t *testing.T, api http.Handler, ns, name string) string {
	t.Helper()
	createNamespace(t, api, ns)
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	lease := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"` + name + `"},"spec":{"holderIdentity":"a"}}`
	if code, body := do(api, http.MethodPost, leases, "application/json", []byte(lease)); code != http.StatusCreated {
		t.Fatalf("creating lease: %d %s", code, body)
	}
	return leases + "/" + name
}

// patchStatus sends a JSON patch and decodes the Status answered.
func patchStatus(t *testing.T, api http.Handler, path, patch string) metav1.Status {
	t.Helper()
	rec := doRecorded(api, http.MethodPatch, path, "application/json-patch+json", "application/json", []byte(patch))
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("PATCH: %d %.200s, want a Status (%v)", rec.Code, rec.Body, err)
	}
	if int(st.Code) != rec.Code {
		t.Fatalf("Status code %d in a %d response", st.Code, rec.Code)
	}
	return st
}

// A JSON patch of more than 10,000 operations is refused before it is
// applied, with kube-apiserver's 413.
func TestJSONPatchOperationLimit(t *testing.T) {
	h := newDirectHandler(t)
	path := leasePath(t, h.api, "ops", "l")
	op := `{"op":"test","path":"/spec/holderIdentity","value":"a"}`
	ok := "[" + strings.Repeat(op+",", 9999) + op + "]"
	if code, body := do(h.api, http.MethodPatch, path, "application/json-patch+json", []byte(ok)); code != http.StatusOK {
		t.Fatalf("10,000 operations: %d %s, want 200", code, body)
	}
	st := patchStatus(t, h.api, path, "["+strings.Repeat(op+",", 10000)+op+"]")
	if st.Code != http.StatusRequestEntityTooLarge || st.Reason != metav1.StatusReasonRequestEntityTooLarge ||
		st.Message != "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001" {
		t.Fatalf("10,001 operations: %+v", st)
	}
}

// The copy bomb: 40 copy operations, each doubling an array, would grow a
// 4 KB patch to terabytes. The copies are capped at the body limit, as in
// kube-apiserver, and the patch fails at once with its 422 (whose body,
// there too, does not say why).
func TestJSONPatchCopyBomb(t *testing.T) {
	h := newDirectHandler(t)
	path := leasePath(t, h.api, "bomb", "l")
	bomb := func(copies int) string {
		ops := []string{`{"op":"add","path":"/a","value":["` + strings.Repeat("x", 64) + `"]}`}
		for range copies {
			ops = append(ops, `{"op":"copy","from":"/a","path":"/a/-"}`)
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	// A few doublings (64 KiB copied) are within the limit: the patch
	// applies, and the unknown field is dropped with a warning.
	if code, body := do(h.api, http.MethodPatch, path, "application/json-patch+json", []byte(bomb(10))); code != http.StatusOK {
		t.Fatalf("10 copies: %d %.300s, want 200", code, body)
	}
	patch := bomb(40)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st := patchStatus(t, h.api, path, patch)
	runtime.ReadMemStats(&after)
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid ||
		st.Message != "the server rejected our request due to an error in our request" {
		t.Fatalf("copy bomb: %+v", st)
	}
	// The copies stop at 3 MiB; each is marshalled once and the array's
	// elements are shared, so the whole request allocates a small multiple
	// of that (unbounded, it was tens of GB).
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("copy bomb allocated %d MiB", got>>20)
	}
	if len(patch) > 4400 {
		t.Fatalf("the bomb is %d bytes, want about 4.3 KB", len(patch))
	}
}
