package server_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"golang.org/x/net/http2"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestServerHTTP2Settings reads the server's first HTTP/2 SETTINGS frame: it
// allows 2,000 concurrent streams, so that a connection shared by many
// clients (as in bench) does not queue them, and keeps the HPACK table at
// HTTP/2's 4 KiB default, which bounds what one header costs its decoder.
func TestServerHTTP2Settings(t *testing.T) {
	srv := servertest.Start(t)
	conn, err := tls.Dial("tcp", srv.Addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame is %v, want SETTINGS", f.Header())
	}
	want := map[http2.SettingID]uint32{
		http2.SettingHeaderTableSize:      4096,
		http2.SettingMaxConcurrentStreams: 2000,
	}
	for id, w := range want {
		// An absent setting has HTTP/2's initial value, which is 4096 for
		// the table and unlimited for streams.
		v, ok := sf.Value(id)
		if !ok && id == http2.SettingHeaderTableSize {
			v, ok = 4096, true
		}
		if !ok || v != w {
			t.Errorf("%v = %d (sent: %v), want %d", id, v, ok, w)
		}
	}
}

// TestHTTP2WatchOutlivesItsWriteDeadline: a watch that stays quiet after
// its first event must run to its timeoutSeconds. Each frame's write has a
// 10 s deadline, and on HTTP/2 a deadline left set is a timer that resets
// the stream (INTERNAL_ERROR) when it fires; client-go then ended quiet
// Node and Event watches every 10-25 s.
func TestHTTP2WatchOutlivesItsWriteDeadline(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases := srv.Client.CoordinationV1().Leases("default")
	holder := "a"
	if _, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const timeout = 14 // seconds: past the 10 s write deadline
	timeoutSeconds := int64(timeout)
	start := time.Now()
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: "0", TimeoutSeconds: &timeoutSeconds})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	events := 0
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error after %v: %v", time.Since(start), ev.Object)
		}
		events++
	}
	if took := time.Since(start); took < (timeout-1)*time.Second {
		t.Fatalf("the watch ended after %v with %d events, want it open until its timeoutSeconds (%d s)", took.Round(time.Millisecond), events, timeout)
	}
	if events != 1 {
		t.Fatalf("%d events, want the lease's ADDED only", events)
	}
}
