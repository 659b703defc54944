package apiserver

import (
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
)

// queryBool reads a boolean query parameter the way kube-apiserver's
// parameter codec does (runtime.Convert_Slice_string_To_bool, which
// metav1.Convert_url_Values_To_v1_ListOptions also uses for watch,
// allowWatchBookmarks and sendInitialEvents): absent is false; present, it
// is true unless its first value is "0" or "false" in any case. So
// watch=True (the Python client's spelling), watch=yes and a bare ?watch
// all ask for a watch, exactly as Kubernetes reads them. Every boolean
// parameter the request path reads outside ListOptions goes through here.
func queryBool(q url.Values, name string) bool {
	v := q[name]
	var b bool
	// The conversion cannot fail for a []string input.
	_ = runtime.Convert_Slice_string_To_bool(&v, &b, nil)
	return b
}
