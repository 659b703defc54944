package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A PUT at a resourceVersion the store has not reached meets the
// preconditions in kube-apiserver's order (registry Store.Update against
// etcd): the uid first, then a missing object (404 for a kind PUT may not
// create), and only then the stale version's 409
// (TestUpdateWithFutureResourceVersionConflicts). An early check of the
// resourceVersion answered both with the stale version's 409.
func TestUpdateAtFutureResourceVersionChecksInKubeOrder(t *testing.T) {
	h := newDirectHandler(t)
	const ns = "future-order"
	path := leasePath(t, h.api, ns, "l")
	const uid = "00000000-0000-0000-0000-000000000001"
	lease := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"` + ns + `","uid":"` + uid + `","resourceVersion":"999999"},"spec":{"holderIdentity":"b"}}`
	st := putStatus(t, h.api, path, lease)
	if st.Code != http.StatusConflict || !strings.Contains(st.Message, "Precondition failed: UID in precondition: "+uid) {
		t.Errorf("PUT with a wrong uid at a future resourceVersion: %d %q, want the uid precondition's 409", st.Code, st.Message)
	}

	node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"ghost","resourceVersion":"999999"}}`
	st = putStatus(t, h.api, "/api/v1/nodes/ghost", node)
	if st.Code != http.StatusNotFound || st.Message != `nodes "ghost" not found` {
		t.Errorf("PUT of a missing Node at a future resourceVersion: %d %q, want 404", st.Code, st.Message)
	}
}

// putStatus sends a JSON PUT and decodes the Status answered.
func putStatus(t *testing.T, api http.Handler, path, body string) metav1.Status {
	t.Helper()
	rec := doRecorded(api, http.MethodPut, path, "application/json", "application/json", []byte(body))
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("PUT %s: %d %.200s, want a Status (%v)", path, rec.Code, rec.Body, err)
	}
	return st
}
