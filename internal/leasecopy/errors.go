package leasecopy

import (
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// kubectlError words err as kubectl words the same failure, so that the
// copy's errors read like the tool its users know: a Status from the
// server is "Error from server (Reason): message", a request that reached
// no server is "Unable to connect to the server: cause". what says which
// side or step failed.
func kubectlError(what string, err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return fmt.Errorf("%s: Error from server (%s): %w", what, s.Reason, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: Unable to connect to the server: %w", what, ue.Err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
