package objects

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ParseResourceVersion parses a resourceVersion ("" → 0): the one place a
// resourceVersion a client sent becomes the integer the store compares.
func ParseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// ReadResourceVersion turns a get/list resourceVersion parameter into a
// freshness target (Store.Current, Store.WaitFresh): unset is a consistent
// read (-1), "0" any version (0), else not older than it.
func ReadResourceVersion(param string) (int64, error) {
	if param == "" {
		return -1, nil
	}
	return ParseResourceVersion(param)
}
