package audit

import "context"

type requestKey struct{}

// WithRequest returns a context carrying q, for verb handlers that log
// request and response objects far from where Begin was called.
func WithRequest(ctx context.Context, q *Request) context.Context {
	if q == nil {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, q)
}

// RequestFrom returns the Request ctx carries, or nil (which every Request
// method accepts).
func RequestFrom(ctx context.Context) *Request {
	q, _ := ctx.Value(requestKey{}).(*Request)
	return q
}
