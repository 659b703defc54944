package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestErrorKindOfAPIErrors(t *testing.T) {
	lease := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	cases := []struct {
		err  error
		want string
	}{
		{apierrors.NewConflict(lease, "n1", errors.New("the object has been modified")), KindConflict},
		{fmt.Errorf("renewing: %w", apierrors.NewConflict(lease, "n1", errors.New("modified"))), KindConflict},
		{apierrors.NewNotFound(lease, "n1"), "NotFound"},
		{apierrors.NewTooManyRequests("slow down", 1), "TooManyRequests"},
		{apierrors.NewInternalError(errors.New("boom")), "InternalError"},
		{apierrors.NewGenericServerResponse(http.StatusBadGateway, "put", lease, "n1", "", 0, false), "InternalError"},
		{&apierrors.StatusError{ErrStatus: apierrors.NewBadRequest("x").ErrStatus}, "BadRequest"},
		{context.DeadlineExceeded, KindTimeout},
		{fmt.Errorf("put: %w", context.DeadlineExceeded), KindTimeout},
		{errors.New("something else"), KindOther},
	}
	for _, c := range cases {
		if got := ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	empty := apierrors.NewConflict(lease, "n1", errors.New("x"))
	empty.ErrStatus.Reason = ""
	if got := ErrorKind(empty); got != "status-409" {
		t.Errorf("status without a reason: %q, want status-409", got)
	}
}

func TestErrorKindOfNetworkErrors(t *testing.T) {
	// A port that was just free: nothing listens there any more.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	client := &http.Client{Timeout: 2 * time.Second}
	_, err = client.Get("http://" + addr + "/")
	if err == nil {
		t.Fatal("request to a closed port succeeded")
	}
	if got := ErrorKind(err); got != KindConnection {
		t.Errorf("refused connection (%v) classified %q", err, got)
	}

	// A server that accepts but never answers: the client's deadline fires.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hang.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr}).Do(req)
	if err == nil {
		t.Fatal("request to a silent server succeeded")
	}
	if got := ErrorKind(err); got != KindTimeout {
		t.Errorf("deadline (%v) classified %q", err, got)
	}
}
