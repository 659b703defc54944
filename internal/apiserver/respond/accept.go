package respond

import (
	"cmp"
	"mime"
	"slices"
	"strconv"
	"strings"
)

// ParseAccept splits an Accept header into clauses ordered by preference,
// as kube-apiserver's negotiation orders them: higher q first, then more
// specific ranges, and otherwise in the order the client wrote them. The
// stable order matters: client-go lists its preferred discovery format first
// with equal q-values (for example
// "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
// and relies on the server honouring that order. Malformed clauses are
// skipped, as kube-apiserver does.
func ParseAccept(header string) []Clause {
	var clauses []Clause
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
		c := Clause{Type: typ, Subtype: subtype, Q: 1, Params: params}
		if qs, ok := params["q"]; ok {
			q, err := strconv.ParseFloat(qs, 64)
			if err != nil || q < 0 || q > 1 {
				continue
			}
			c.Q = q
			delete(params, "q")
		}
		clauses = append(clauses, c)
	}
	slices.SortStableFunc(clauses, func(a, b Clause) int {
		if byQ := cmp.Compare(b.Q, a.Q); byQ != 0 {
			return byQ
		}
		return cmp.Compare(b.specificity(), a.specificity())
	})
	return clauses
}
