package apiserver

import "sync"

// maxPooledBytes bounds the scratch slices kept for reuse, as
// maxPooledEncodeBuffer does for responses: one large request should not pin
// its memory for every later small one.
const maxPooledBytes = 16 << 10

// byteBuffers recycles scratch byte slices whose contents are garbage as
// soon as the request step that filled them is over: write request bodies
// (a renewal's few hundred bytes are dead once decoded, since decoding
// copies every string and byte slice out of them, as
// TestDecodedObjectsShareNothingWithTheBody checks) and ownsAll's lookup
// keys. The zero value is ready.
type byteBuffers struct{ pool sync.Pool }

// get returns a slice to fill (possibly too small: appending then
// allocates).
func (p *byteBuffers) get() *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// put takes back b, now holding used, once nothing refers to used.
func (p *byteBuffers) put(b *[]byte, used []byte) {
	if cap(used) > maxPooledBytes {
		return
	}
	*b = used[:0]
	p.pool.Put(b)
}
