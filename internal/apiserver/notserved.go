package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceNotServed is kube-apiserver's answer for a resource, or a group
// version, that it does not serve: the 404 of a path nothing handles,
// "the server could not find the requested resource", naming no object and
// with empty details whatever name the URL carried (not `configmaps ""
// not found`, which would claim the resource exists and an object of it
// does not, and which clients such as the Python one treat differently).
func resourceNotServed() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}
