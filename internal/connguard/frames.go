package connguard

import (
	"encoding/binary"

	"golang.org/x/net/http2"
)

const frameHeaderLen = 9

// frameHeader is the part of an HTTP/2 frame header the guard reads.
type frameHeader struct {
	length   uint32
	typ      http2.FrameType
	flags    http2.Flags
	streamID uint32
}

// endsHeaderBlock reports whether the frame is the last of a header block.
func (h frameHeader) endsHeaderBlock() bool {
	return (h.typ == http2.FrameHeaders || h.typ == http2.FrameContinuation) && h.flags.Has(http2.FlagHeadersEndHeaders)
}

// scanEvent is what frameScanner.advance stopped at.
type scanEvent int

const (
	scanMore     scanEvent = iota // the input ran out
	scanPreface                   // the client preface ended
	scanHeader                    // a frame header is complete (scanner.cur)
	scanFrameEnd                  // the frame in scanner.cur ended
)

// frameScanner follows the frame boundaries of one direction of an HTTP/2
// byte stream as it is read or written in arbitrary pieces, without
// copying or buffering more than one frame header.
type frameScanner struct {
	preface   int // client preface bytes still to pass (reading side only)
	hdr       [frameHeaderLen]byte
	have      int  // bytes of hdr collected
	inPayload bool // cur's header is complete and its payload is passing
	remain    uint32
	cur       frameHeader
}

// atBoundary reports whether the bytes so far end exactly between frames.
func (s *frameScanner) atBoundary() bool {
	return s.preface == 0 && s.have == 0 && !s.inPayload
}

// advance consumes p up to the next event and returns how many bytes that
// took. It returns scanMore only when all of p is consumed. A frame with
// no payload yields scanHeader and then, on the next call, scanFrameEnd.
func (s *frameScanner) advance(p []byte) (int, scanEvent) {
	if s.preface > 0 {
		n := min(len(p), s.preface)
		s.preface -= n
		if s.preface == 0 {
			return n, scanPreface
		}
		return n, scanMore
	}
	if s.inPayload {
		n := int(min(uint32(min(len(p), 1<<24)), s.remain))
		s.remain -= uint32(n)
		if s.remain == 0 {
			s.inPayload = false
			return n, scanFrameEnd
		}
		return n, scanMore
	}
	n := copy(s.hdr[s.have:], p)
	s.have += n
	if s.have < frameHeaderLen {
		return n, scanMore
	}
	s.have = 0
	s.cur = frameHeader{
		length:   uint32(s.hdr[0])<<16 | uint32(s.hdr[1])<<8 | uint32(s.hdr[2]),
		typ:      http2.FrameType(s.hdr[3]),
		flags:    http2.Flags(s.hdr[4]),
		streamID: binary.BigEndian.Uint32(s.hdr[5:]) & (1<<31 - 1),
	}
	s.remain = s.cur.length
	s.inPayload = true
	return n, scanHeader
}
