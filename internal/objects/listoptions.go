package objects

// listoptions.go is what a list's or watch's options may combine:
// kube-apiserver's ListOptions rules on resourceVersion,
// resourceVersionMatch, sendInitialEvents and continue.

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ListOptions are a list's, watch's or deletecollection's options: the
// client's metav1.ListOptions and its parsed selectors.
type ListOptions struct {
	metav1.ListOptions
	Selector Selector
}

// CheckListOptions applies kube-apiserver's ListOptions rules to a list
// (watch false) or a watch, and answers their violation with the 422 of
// kind ListOptions.
func CheckListOptions(o *metav1.ListOptions, watch bool) error {
	if errs := validateListOptions(o, watch); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

func validateListOptions(o *metav1.ListOptions, watch bool) field.ErrorList {
	var errs field.ErrorList
	rvm := field.NewPath("resourceVersionMatch")
	if o.SendInitialEvents != nil {
		if !watch {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		} else {
			if o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(rvm, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
			if !o.AllowWatchBookmarks {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be set to true when sendInitialEvents is specified"))
			}
			if o.Continue != "" {
				errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden when continue is provided"))
			}
		}
		return errs
	}
	if o.ResourceVersionMatch == "" {
		return nil
	}
	if watch {
		return append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
	}
	if o.ResourceVersion == "" {
		errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
	}
	if o.Continue != "" {
		errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
	}
	switch o.ResourceVersionMatch {
	case metav1.ResourceVersionMatchNotOlderThan:
	case metav1.ResourceVersionMatchExact:
		if o.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(rvm, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	default:
		errs = append(errs, field.NotSupported(rvm, o.ResourceVersionMatch, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan)}))
	}
	return errs
}
