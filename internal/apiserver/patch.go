package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

func (s *Server) patch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, err := s.accept(r, false)
	if err != nil {
		return err
	}
	wo, err := parseWriteOptions(r)
	if err != nil {
		return err
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	switch {
	case err != nil:
		return s.unsupportedMediaType()
	case pt == types.JSONPatchType, pt == types.MergePatchType, pt == types.StrategicMergePatchType, pt == types.ApplyYAMLPatchType:
	default:
		return s.unsupportedMediaType()
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	logPatch(r, pt, body)
	force := queryBool(r.URL.Query(), "force")
	if pt != types.ApplyYAMLPatchType && r.URL.Query().Has("force") {
		return apierrors.NewBadRequest("force is only allowed for apply patches")
	}
	var (
		out      runtime.Object
		created  bool
		warnings []string
	)
	if pt == types.ApplyYAMLPatchType {
		if r.URL.Query().Get("fieldManager") == "" {
			return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("PatchOptions").GroupKind(), "", field.ErrorList{
				field.Required(field.NewPath("fieldManager"), "is required for apply patch")})
		}
		out, created, warnings, err = s.applyPatch(r.Context(), res, info, body, wo, force)
	} else {
		out, warnings, err = s.mergePatch(r.Context(), res, info, pt, body, wo)
	}
	if err != nil {
		return err
	}
	return s.respond(w, res, n, out, created, warnings)
}

// objectJSON encodes an object as JSON for patching.
func (s *Server) objectJSON(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := s.jsonInfo.Serializer.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding object for patch: %w", err)
	}
	return buf.Bytes(), nil
}

// mergePatch applies a JSON, merge or strategic merge patch to the current
// object, retrying from a fresh read if another writer won the race (unless
// the patch carried its own resourceVersion).
func (s *Server) mergePatch(ctx context.Context, res *registry.Resource, info requestInfo, pt types.PatchType, patch []byte, wo writeOptions) (runtime.Object, []string, error) {
	var patched []byte
	var warnings []string
	out, err := s.objects.GuaranteedUpdate(ctx, res, info.namespace, info.name, info.subresource, wo.WriteOptions, func(cur runtime.Object) (runtime.Object, error) {
		curJSON, err := s.objectJSON(cur)
		if err != nil {
			return nil, err
		}
		if patched, err = applyPatchBytes(res, pt, curJSON, patch); err != nil {
			return nil, err
		}
		obj, w, err := s.decodeObject(res, s.jsonInfo, patched, wo.fieldValidation)
		if err != nil {
			return nil, err
		}
		if err := checkPatchedIdentity(res, info, obj); err != nil {
			return nil, err
		}
		warnings = w
		return obj, nil
	}, func(cur runtime.Object) bool { return !patchSetsResourceVersion(patched, cur) })
	if err != nil {
		return nil, nil, err
	}
	return out, warnings, nil
}

// patchSetsResourceVersion tells whether the patch itself carried a
// resourceVersion precondition (then a conflict is the client's answer).
func patchSetsResourceVersion(patched []byte, cur runtime.Object) bool {
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(patched, &m) != nil {
		return false
	}
	acc, err := meta.Accessor(cur)
	return err == nil && m.Metadata.ResourceVersion != acc.GetResourceVersion()
}

func applyPatchBytes(res *registry.Resource, pt types.PatchType, cur, patch []byte) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch pt {
	case types.JSONPatchType:
		p, err := decodeJSONPatch(patch)
		if err != nil {
			return nil, err
		}
		return applyJSONPatch(p, cur)
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(cur, patch)
	case types.StrategicMergePatchType:
		out, err = strategicpatch.StrategicMergePatch(cur, patch, res.New())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return out, nil
}

func checkPatchedIdentity(res *registry.Resource, info requestInfo, obj runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if acc.GetName() != info.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), info.name))
	}
	return objects.CheckNamespace(res, acc, info.namespace)
}

// applyPatch is server-side apply: apimachinery's field manager merges the
// applied configuration into the live object and tracks ownership.
func (s *Server) applyPatch(ctx context.Context, res *registry.Resource, info requestInfo, patch []byte, wo writeOptions, force bool) (runtime.Object, bool, []string, error) {
	if s.objects.FieldManager(res, info.subresource) == nil {
		return nil, false, nil, apierrors.NewBadRequest("server-side apply is not available: no type information")
	}
	applied := &unstructured.Unstructured{}
	jsonPatch, err := yaml.YAMLToJSON(patch)
	if err != nil {
		return nil, false, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if err := applied.UnmarshalJSON(jsonPatch); err != nil {
		return nil, false, nil, apierrors.NewBadRequest(err.Error())
	}
	if gvk := applied.GroupVersionKind(); gvk != res.GroupVersionKind() {
		return nil, false, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), res.GroupVersion))
	}
	if applied.GetName() != info.name {
		return nil, false, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", applied.GetName(), info.name))
	}
	out, created, err := s.objects.Apply(ctx, res, info.namespace, info.name, info.subresource, applied, force, wo.WriteOptions)
	return out, created, nil, err
}
