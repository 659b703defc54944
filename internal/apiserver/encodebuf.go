package apiserver

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// maxPooledEncodeBuffer bounds the buffers kept for reuse: a large list
// response should not pin its memory for every later small answer.
const maxPooledEncodeBuffer = 64 << 10

// encodeBuffer is the scratch memory of one response encoding: the bytes
// written and the allocator the protobuf serializer marshals into. Reusing
// them takes two to three allocations (and their garbage) off every
// response, as kube-apiserver's pooled allocators do.
type encodeBuffer struct {
	out   bytes.Buffer
	alloc runtime.Allocator
}

// encodeBuffers hands out encodeBuffers; the zero value is ready.
type encodeBuffers struct{ pool sync.Pool }

func (p *encodeBuffers) get() *encodeBuffer {
	if b, ok := p.pool.Get().(*encodeBuffer); ok {
		b.out.Reset()
		return b
	}
	return &encodeBuffer{}
}

// put returns b once nothing refers to its bytes any more.
func (p *encodeBuffers) put(b *encodeBuffer) {
	if b.out.Cap() > maxPooledEncodeBuffer {
		return
	}
	p.pool.Put(b)
}

// encode writes obj into b.out, through the encoder's allocator path when
// it has one.
func (b *encodeBuffer) encode(enc runtime.Encoder, obj runtime.Object) error {
	if ea, ok := enc.(runtime.EncoderWithAllocator); ok {
		return ea.EncodeWithAllocator(obj, &b.out, &b.alloc)
	}
	return enc.Encode(obj, &b.out)
}

// singleWriteCapture keeps the slice of a lone Write without copying it.
// That breaks io.Writer's "must not retain p", which is safe only for a
// caller that hands over memory it never touches again: the storage
// encoder (a protobuf.Serializer using a fresh SimpleAllocator per Encode)
// writes its whole output in one Write of a slice allocated for that call,
// so the slice becomes the stored value without a copy. Other writes (the
// serializer's constant prefix, when it writes one) are copied.
type singleWriteCapture struct {
	data   []byte
	writes int
}

var _ io.Writer = (*singleWriteCapture)(nil)

func (c *singleWriteCapture) Write(p []byte) (int, error) {
	c.writes++
	if c.writes == 1 {
		c.data = p
		return len(p), nil
	}
	// More than one write: the earlier slices may be reused by the writer,
	// so from here on everything is copied.
	if c.writes == 2 {
		c.data = append([]byte(nil), c.data...)
	}
	c.data = append(c.data, p...)
	return len(p), nil
}
