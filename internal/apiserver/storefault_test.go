package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/storage"
)

// failingWrites is a store whose writes fail with err (reads work), as a
// store on a full or failing disk does.
type failingWrites struct {
	storage.Interface
	err error
}

func (f failingWrites) Create(context.Context, string, []byte) (int64, error) {
	return 0, fmt.Errorf("writing: %w", f.err)
}

func (f failingWrites) Update(context.Context, string, int64, []byte) (int64, error) {
	return 0, fmt.Errorf("writing: %w", f.err)
}

// A write the store refuses for lack of space is a 507 naming the cause; one
// refused while the store recovers is a 503 with Retry-After: never a 500.
func TestStorageFaultsBecomeStatuses(t *testing.T) {
	for _, tc := range []struct {
		err        error
		code       int
		reason     metav1.StatusReason
		retryAfter string
	}{
		{storage.ErrInsufficientStorage, http.StatusInsufficientStorage, "InsufficientStorage", ""},
		{storage.ErrUnavailable, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "1"},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			h := newDirectHandler(t, func(c *apiserver.Config) { c.Store = failingWrites{Interface: c.Store, err: tc.err} })
			body := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"full"}}`)
			rec := doRecorded(h.api, http.MethodPost, "/api/v1/namespaces", "application/json", "application/json", body)
			if rec.Code != tc.code {
				t.Fatalf("POST: %d %s, want %d", rec.Code, rec.Body, tc.code)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			var st metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if st.Kind != "Status" || int(st.Code) != tc.code || st.Reason != tc.reason || st.Message != "writing: "+tc.err.Error() {
				t.Errorf("Status %+v, want code %d, reason %s, the store's message", st, tc.code, tc.reason)
			}
		})
	}
}

// doRecorded serves one request and returns the whole response.
func doRecorded(api http.Handler, method, path, contentType, accept string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec
}
