package configmap

import (
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSize is the most bytes a ConfigMap's data and binaryData values may
// hold together, kube-apiserver's limit (core.MaxSecretSize).
const maxSize = 1 * 1024 * 1024

// Validate checks what kube-apiserver's ValidateConfigMap checks beyond
// ObjectMeta (which the generic path validates): every key is a valid
// ConfigMap key, no key is in both data and binaryData, and the values
// hold at most 1 MiB together. Keys are visited in order so that the
// errors are too.
func Validate(c *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for _, k := range slices.Sorted(maps.Keys(c.Data)) {
		p := field.NewPath("data").Key(k)
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		if _, dup := c.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(p, k, "duplicate of key present in binaryData"))
		}
		size += len(c.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.BinaryData)) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, msg))
		}
		size += len(c.BinaryData[k])
	}
	if size > maxSize {
		// The empty path: the error is about the whole object.
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxSize))
	}
	return errs
}

// ValidateUpdate adds kube-apiserver's immutability rule: once `immutable`
// is true, it cannot be unset and data and binaryData cannot change.
func ValidateUpdate(c, old *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	if old.Immutable != nil && *old.Immutable {
		const msg = "field is immutable when `immutable` is set"
		if c.Immutable == nil || !*c.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
		}
		if !reflect.DeepEqual(c.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
		}
		if !reflect.DeepEqual(c.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), msg))
		}
	}
	return append(errs, Validate(c)...)
}
