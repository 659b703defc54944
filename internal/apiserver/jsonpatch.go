package apiserver

import (
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// applyJSONPatch applies an RFC 6902 patch to doc. The library panics on
// some malformed patches (a "replace" of the root with no "value" is a nil
// dereference); those are the client's mistake, so the panic becomes an
// error the caller answers with 400, not a 500.
func applyJSONPatch(p jsonpatch.Patch, doc []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("invalid JSON patch: %v", r)
		}
	}()
	return p.Apply(doc)
}
