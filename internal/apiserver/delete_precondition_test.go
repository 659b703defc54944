package apiserver_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// A delete whose only precondition is the uid succeeds while other writers
// update the object: kube-apiserver's conditional delete re-reads the object
// and checks the preconditions again when a write got in between, so only a
// precondition that no longer holds is a 409. test/robustness found the
// 409 "the object has been modified" (2 of ~80 uid-precondition deletes
// under concurrent patches).
func TestDeleteWithUIDPreconditionSurvivesConcurrentUpdates(t *testing.T) {
	h := newDirectHandler(t)
	const ns = "deletes"
	const leases = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	createNamespace(t, h.api, ns)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; round < 200 && time.Now().Before(deadline); round++ {
		code, body := do(h.api, http.MethodPost, leases, "application/json", []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}`))
		if code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
		var created coordinationv1.Lease
		if _, _, err := pb.Decode(body, nil, &created); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					patch := fmt.Sprintf(`{"spec":{"holderIdentity":"w%d-%d"}}`, w, i)
					if code, _ := do(h.api, http.MethodPatch, leases+"/l", "application/merge-patch+json", []byte(patch)); code == http.StatusNotFound {
						return
					}
					// Writers as busy as the robustness suite's clients; a
					// delete still gets through between their writes.
					time.Sleep(200 * time.Microsecond)
				}
			}()
		}
		time.Sleep(time.Millisecond)
		opts := fmt.Sprintf(`{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":%q}}`, created.UID)
		code, body = do(h.api, http.MethodDelete, leases+"/l", "application/json", []byte(opts))
		close(stop)
		wg.Wait()
		if code != http.StatusOK {
			t.Fatalf("round %d: delete with the lease's uid as precondition, during updates: %d %s, want 200", round, code, body)
		}
	}
}
