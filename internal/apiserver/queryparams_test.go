package apiserver

import (
	"net/http/httptest"
	"testing"
)

// TestBooleanQueryParameters reads booleans as Kubernetes does: present and
// not "0" or "false" (any case) is true. The Python client sends watch=True.
func TestBooleanQueryParameters(t *testing.T) {
	for query, want := range map[string]bool{
		"":                     false,
		"?watch=true":          true,
		"?watch=True":          true,
		"?watch=TRUE":          true,
		"?watch=1":             true,
		"?watch=yes":           true,
		"?watch":               true,
		"?watch=":              true,
		"?watch=false":         false,
		"?watch=False":         false,
		"?watch=FALSE":         false,
		"?watch=0":             false,
		"?watch=0&watch=true":  false, // the first value decides, as in apimachinery
		"?labelSelector=a%3Db": false,
	} {
		info, ok := parseRequestInfo(httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps"+query, nil))
		if got := info.verb == "watch"; !ok || got != want {
			t.Errorf("GET configmaps%s: verb %q, want watch=%v", query, info.verb, want)
		}
		if got := queryBool(httptest.NewRequest("GET", "/x"+query, nil).URL.Query(), "watch"); got != want {
			t.Errorf("queryBool(%q) = %v, want %v", query, got, want)
		}
	}
}
