package apiserver

import (
	"fmt"
	"net/http"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxJSONPatchOperations caps the operations of one JSON patch, as
// kube-apiserver does: applying each costs a walk of the document.
const maxJSONPatchOperations = 10000

// limitJSONPatchCopies caps the bytes a JSON patch's copy operations may add
// to the document at MaxRequestBodyBytes, as kube-apiserver does (its
// JSONPatchMaxCopyBytes): without it 40 copies that each double an array
// turn a 4 KB patch into terabytes. The limit is the library's package
// variable, so it can only be set process-wide; it is only ever lowered,
// never raised, so that another user of the library that wants less keeps
// it.
func limitJSONPatchCopies() {
	for {
		cur := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
		if cur > 0 && cur <= MaxRequestBodyBytes {
			return
		}
		if atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, cur, MaxRequestBodyBytes) {
			return
		}
	}
}

// decodeJSONPatch decodes an RFC 6902 patch and refuses one of more than
// maxJSONPatchOperations operations with kube-apiserver's 413.
func decodeJSONPatch(patch []byte) (jsonpatch.Patch, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(p) > maxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
	}
	return p, nil
}

// applyJSONPatch applies an RFC 6902 patch to doc. A patch that does not
// apply (a missing path, a failed test, copies beyond the limit) is a 422,
// as in kube-apiserver. The library panics on some malformed patches (a
// "replace" of the root with no "value" is a nil dereference); those are
// the client's mistake too, so the panic becomes the same 422, not a 500.
func applyJSONPatch(p jsonpatch.Patch, doc []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, patchNotApplied(fmt.Errorf("invalid JSON patch: %v", r))
		}
	}()
	out, err = p.Apply(doc)
	if err != nil {
		return nil, patchNotApplied(err)
	}
	return out, nil
}

// patchNotApplied is kube-apiserver's 422 for a JSON patch that fails.
func patchNotApplied(err error) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
}
