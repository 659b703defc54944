package discovery

import (
	"cmp"
	"mime"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, subtype string
	q            float64
	params       map[string]string
}

// specificity ranks how precisely the clause names a media type: 2 for
// type/subtype, 1 for type/*, 0 for */*.
func (c acceptClause) specificity() int {
	switch {
	case c.typ == "*":
		return 0
	case c.subtype == "*":
		return 1
	}
	return 2
}

// matches reports whether the clause's media range covers the serializer.
func (c acceptClause) matches(info runtime.SerializerInfo) bool {
	switch c.specificity() {
	case 0:
		return true
	case 1:
		return c.typ == info.MediaTypeType
	}
	return c.typ == info.MediaTypeType && c.subtype == info.MediaTypeSubType
}

// parseAccept splits an Accept header into clauses ordered by preference:
// higher q first, then more specific ranges, and otherwise in the order the
// client wrote them. The stable order matters: client-go lists its preferred
// discovery format first with equal q-values (for example
// "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
// and relies on the server honouring that order. Malformed clauses are
// skipped, as kube-apiserver does.
func parseAccept(header string) []acceptClause {
	var clauses []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		// A bare "*" is a common shorthand for "*/*".
		if part == "*" || strings.HasPrefix(part, "*;") {
			part = "*/*" + part[1:]
		}
		mediaType, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		typ, subtype, ok := strings.Cut(mediaType, "/")
		if !ok || typ == "" || subtype == "" || (typ == "*" && subtype != "*") {
			continue
		}
		c := acceptClause{typ: typ, subtype: subtype, q: 1, params: params}
		if qs, ok := params["q"]; ok {
			q, err := strconv.ParseFloat(qs, 64)
			if err != nil || q < 0 || q > 1 {
				continue
			}
			c.q = q
			delete(params, "q")
		}
		clauses = append(clauses, c)
	}
	slices.SortStableFunc(clauses, func(a, b acceptClause) int {
		if byQ := cmp.Compare(b.q, a.q); byQ != 0 {
			return byQ
		}
		return cmp.Compare(b.specificity(), a.specificity())
	})
	return clauses
}

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

// negotiate picks the serializer and transformation for an Accept header the
// way kube-apiserver does: an empty header gets the first supported type
// (JSON); otherwise the first clause, in preference order, that names a
// supported media type with parameters the endpoint can honour wins. A media
// type whose most specific matching clause has q=0 is refused even if a
// wildcard would allow it. Unknown parameters (charset, client-go's
// profile=nopeer, ...) are ignored: this server has no peers, so its local
// and peer-aggregated discovery profiles are the same document.
func negotiate(header string, supported []runtime.SerializerInfo, allowed transformAllowed) (negotiated, bool) {
	if strings.TrimSpace(header) == "" {
		return negotiated{info: supported[0]}, true
	}
	clauses := parseAccept(header)
	refused := refusedMediaTypes(clauses, supported)
	for _, c := range clauses {
		if c.q <= 0 {
			continue
		}
		for i, info := range supported {
			if refused[i] || !c.matches(info) {
				continue
			}
			if n, ok := clauseOptions(c, info, allowed); ok {
				return n, true
			}
		}
	}
	return negotiated{}, false
}

// refusedMediaTypes marks each supported type whose most specific matching
// clause carries q=0 ("not acceptable", RFC 9110 section 12.5.1).
func refusedMediaTypes(clauses []acceptClause, supported []runtime.SerializerInfo) []bool {
	refused := make([]bool, len(supported))
	for i, info := range supported {
		best := -1
		for _, c := range clauses {
			if s := c.specificity(); c.matches(info) && s > best {
				best = s
				refused[i] = c.q <= 0
			}
		}
	}
	return refused
}

// clauseOptions interprets the parameters of one clause for one serializer.
func clauseOptions(c acceptClause, info runtime.SerializerInfo, allowed transformAllowed) (negotiated, bool) {
	n := negotiated{info: info}
	for k, v := range c.params {
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

// mediaTypes lists the supported media types for a 406 message.
func mediaTypes(supported []runtime.SerializerInfo) []string {
	out := make([]string, 0, len(supported))
	for _, info := range supported {
		out = append(out, info.MediaType)
	}
	return out
}
