package server_test

import (
	"crypto/tls"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestServerAdvertisesLargeHeaderTable reads the server's first HTTP/2
// SETTINGS frame: it must offer clients a 256 KiB HPACK table, so that a
// client renewing many leases over one connection can index their paths.
func TestServerAdvertisesLargeHeaderTable(t *testing.T) {
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
	v, ok := sf.Value(http2.SettingHeaderTableSize)
	if !ok || v != 256<<10 {
		t.Fatalf("SETTINGS_HEADER_TABLE_SIZE = %d (sent: %v), want %d", v, ok, 256<<10)
	}
}
