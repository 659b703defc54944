package connguard

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/net/http2"
)

// TestFrameScannerAnySplit feeds a client's byte stream to the scanner in
// pieces of every size and checks it reports the same frames at the same
// offsets as when fed whole: the guard sees TLS reads of any length.
func TestFrameScannerAnySplit(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}))
	must(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte("abc"), EndStream: true}))
	must(fr.WriteContinuation(1, true, []byte("defgh")))
	must(fr.WriteRSTStream(1, http2.ErrCodeCancel))
	must(fr.WriteData(3, false, nil))
	must(fr.WriteData(3, true, bytes.Repeat([]byte("x"), 100)))
	stream := buf.Bytes()

	want := scanAll(stream, len(stream))
	wantText := "preface@24 header(SETTINGS,6) end(SETTINGS)@39 header(HEADERS,3) end(HEADERS)@51 header(CONTINUATION,5) " +
		"end(CONTINUATION)@65 header(RST_STREAM,4) end(RST_STREAM)@78 header(DATA,0) end(DATA)@87 header(DATA,100) end(DATA)@196"
	if want != wantText {
		t.Fatalf("whole stream scanned as\n%s\nwant\n%s", want, wantText)
	}
	for size := 1; size < len(stream); size++ {
		if got := scanAll(stream, size); got != want {
			t.Fatalf("in pieces of %d: %s\nwant %s", size, got, want)
		}
	}
}

// scanAll scans stream in pieces of size and describes the events.
func scanAll(stream []byte, size int) string {
	s := frameScanner{preface: len(http2.ClientPreface)}
	var out []string
	for pos := 0; pos < len(stream); pos += size {
		p := stream[pos:min(pos+size, len(stream))]
		off := 0
		for {
			n, ev := s.advance(p[off:])
			off += n
			at := pos + off
			switch ev {
			case scanPreface:
				out = append(out, fmt.Sprintf("preface@%d", at))
			case scanHeader:
				out = append(out, fmt.Sprintf("header(%v,%d)", s.cur.typ, s.cur.length))
			case scanFrameEnd:
				out = append(out, fmt.Sprintf("end(%v)@%d", s.cur.typ, at))
			}
			if ev == scanMore {
				break
			}
		}
	}
	if !s.atBoundary() {
		out = append(out, "not at a boundary")
	}
	return fmt.Sprint(out)[1 : len(fmt.Sprint(out))-1]
}
