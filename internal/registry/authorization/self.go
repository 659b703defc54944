package authorization

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/request"
)

// userInfo is the caller as authentication.k8s.io describes a user.
func userInfo(u request.User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = authenticationv1.ExtraValue(v)
		}
	}
	return info
}

// selfSubjectReviewV1 answers authentication.k8s.io/v1 SelfSubjectReview
// (kubectl auth whoami) with the caller; the body asks nothing.
func selfSubjectReviewV1(_ context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, notA("SelfSubjectReview", obj)
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Now())},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(rec.User)},
	}, nil
}

// selfSubjectReviewV1beta1 is the same answer in v1beta1, which kubectl 1.27
// asks for.
func selfSubjectReviewV1beta1(_ context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1beta1.SelfSubjectReview); !ok {
		return nil, notA("SelfSubjectReview", obj)
	}
	return &authenticationv1beta1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Now())},
		Status:     authenticationv1beta1.SelfSubjectReviewStatus{UserInfo: userInfo(rec.User)},
	}, nil
}
