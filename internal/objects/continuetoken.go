package objects

// continuetoken.go is a paged list's continue token: where the next page
// starts, and at which revision.

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// continueToken is the same shape kube-apiserver hands out: the list's
// revision and the next key relative to the list prefix. Clients treat it
// as opaque.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rv int64, nextKey, prefix string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rv, StartKey: strings.TrimPrefix(nextKey, prefix)})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(token, prefix string) (rv int64, startKey string, err error) {
	bad := apierrors.NewBadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", bad
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil || t.APIVersion != "meta.k8s.io/v1" || t.ResourceVersion <= 0 {
		return 0, "", bad
	}
	if strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return 0, "", apierrors.NewBadRequest("continue key is not valid: invalid start key")
	}
	return t.ResourceVersion, prefix + t.StartKey, nil
}
