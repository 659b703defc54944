package server_test

import (
	"crypto/tls"
	"testing"
	"time"

	"golang.org/x/net/http2"

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
