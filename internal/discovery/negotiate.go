package discovery

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/apiserver/respond"
)

// negotiated is the outcome of content negotiation for one response.
type negotiated struct {
	info runtime.SerializerInfo
	// target is the g/v/as transformation the client asked for, nil for the
	// plain document.
	target *schema.GroupVersionKind
	pretty bool
}

// transformAllowed decides whether an endpoint can produce the requested
// transformation (nil means no transformation).
type transformAllowed func(target *schema.GroupVersionKind) bool

// plainOnly is the restriction of endpoints that serve a single document.
func plainOnly(target *schema.GroupVersionKind) bool { return target == nil }

// negotiate picks the serializer and transformation for an Accept header
// with respond's negotiation (kube-apiserver's): the first clause, in
// preference order, that names a supported media type with parameters the
// endpoint can honour wins. Unknown parameters (charset, client-go's
// profile=nopeer, ...) are ignored: this server has no peers, so its local
// and peer-aggregated discovery profiles are the same document.
func negotiate(neg *respond.Negotiator, header string, allowed transformAllowed) (negotiated, bool) {
	c, info, ok := neg.Negotiate(header, func(c respond.Clause, info runtime.SerializerInfo) bool {
		_, ok := clauseOptions(c, info, allowed)
		return ok
	})
	if !ok {
		return negotiated{}, false
	}
	return clauseOptions(c, info, allowed)
}

// clauseOptions interprets the parameters of one clause for one serializer.
func clauseOptions(c respond.Clause, info runtime.SerializerInfo, allowed transformAllowed) (negotiated, bool) {
	n := negotiated{info: info}
	for k, v := range c.Params {
		switch k {
		case "g", "v", "as":
			if n.target == nil {
				n.target = &schema.GroupVersionKind{}
			}
			switch k {
			case "g":
				n.target.Group = v
			case "v":
				n.target.Version = v
			case "as":
				n.target.Kind = v
			}
		case "pretty":
			n.pretty = v == "1"
		case "stream", "sv":
			// Discovery documents are neither watch streams nor served at
			// another server version.
			if v != "" {
				return negotiated{}, false
			}
		}
	}
	if !allowed(n.target) {
		return negotiated{}, false
	}
	return n, true
}
