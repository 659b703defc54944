package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
)

// unhealthyStore is a store whose Health reports err.
type unhealthyStore struct {
	storage.Interface
	err error
}

func (s unhealthyStore) Health() error { return s.err }

func TestReadyzReportsStorage(t *testing.T) {
	store := &unhealthyStore{}
	r := &readiness{checks: []healthCheck{storageCheck(store)}}
	r.set(true)
	get := func(path string) (int, string) {
		t.Helper()
		w := httptest.NewRecorder()
		r.serve(w, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("healthy: %d %q", code, body)
	}
	if code, body := get("/readyz?verbose"); code != http.StatusOK || body != "[+]shutdown ok\n[+]storage ok\nreadyz check passed\n" {
		t.Fatalf("healthy, verbose: %d %q", code, body)
	}
	store.err = fmt.Errorf("%w: 1.0 MiB free", storage.ErrInsufficientStorage)
	if code, body := get("/readyz"); code != http.StatusInternalServerError || body != "[+]shutdown ok\n[-]storage failed: reason withheld\nreadyz check failed\n" {
		t.Fatalf("disk full: %d %q", code, body)
	}
	code, body := get("/readyz?verbose")
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]storage failed: insufficient storage: 1.0 MiB free\n") {
		t.Fatalf("disk full, verbose: %d %q", code, body)
	}
	store.err = nil
	r.set(false)
	if code, body := get("/readyz"); code != http.StatusInternalServerError || !strings.Contains(body, "[-]shutdown failed") {
		t.Fatalf("shutting down: %d %q", code, body)
	}
}
