package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// reviewTTL is how long the cluster's answer to a SubjectAccessReview is
// reused, allow or deny, as kube's delegating authorizer
// (--authorization-webhook-cache-authorized-ttl and -unauthorized-ttl, 10 s).
const reviewTTL = 10 * time.Second

// reviewCacheSize bounds the remembered answers: one per distinct
// (user, request) pair asked about in the last reviewTTL.
const reviewCacheSize = 10_000

// reviewAuthorizer asks the cluster, with a SubjectAccessReview, about what
// Leasehold's own authorizers (Node, and RBAC over the cluster's watched
// RBAC objects) did not allow: whatever else the cluster authorizes with
// (webhooks, ABAC) then still decides. It is last in the chain, so a
// renewal the Node authorizer or RBAC allows never reaches it.
//
// Written here rather than taken from k8s.io/apiserver's webhook
// authorizer, which brings the CEL compiler (for match conditions this
// authorizer never has) into the binary for one typed call and a cache.
type reviewAuthorizer struct {
	client authorizationclient.SubjectAccessReviewInterface
	cache  *utilcache.LRUExpireCache
	now    func() time.Time
}

func newReviewAuthorizer(c authorizationclient.AuthorizationV1Interface) *reviewAuthorizer {
	return &reviewAuthorizer{client: c.SubjectAccessReviews(), cache: utilcache.NewLRUExpireCache(reviewCacheSize), now: time.Now}
}

type reviewAnswer struct {
	decision authz.Decision
	reason   string
}

// Authorize implements authz.Authorizer. An error reaching the cluster is
// an error (500), as kube's delegating authorizer answers: a request is
// never allowed because the cluster could not be asked.
func (a *reviewAuthorizer) Authorize(ctx context.Context, at *request.Attributes) (authz.Decision, string, error) {
	spec := reviewSpec(at)
	key := reviewKey(&spec)
	if v, ok := a.cache.Get(key); ok {
		ans := v.(reviewAnswer)
		return ans.decision, ans.reason, nil
	}
	res, err := a.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return authz.DecisionNoOpinion, "", fmt.Errorf("asking the cluster (SubjectAccessReview): %w", err)
	}
	ans := reviewAnswer{decision: authz.DecisionNoOpinion, reason: res.Status.Reason}
	switch {
	case res.Status.Allowed:
		ans.decision = authz.DecisionAllow
	case res.Status.Denied:
		ans.decision = authz.DecisionDeny
	}
	if res.Status.EvaluationError != "" && ans.reason == "" {
		ans.reason = res.Status.EvaluationError
	}
	a.cache.Add(key, ans, reviewTTL)
	return ans.decision, ans.reason, nil
}

// reviewSpec is the SubjectAccessReview that asks about at.
func reviewSpec(at *request.Attributes) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   at.User.Name,
		UID:    at.User.UID,
		Groups: at.User.Groups,
	}
	if len(at.User.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(at.User.Extra))
		for k, v := range at.User.Extra {
			spec.Extra[k] = v
		}
	}
	if at.ResourceRequest {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   at.Namespace,
			Verb:        at.Verb,
			Group:       at.APIGroup,
			Version:     at.APIVersion,
			Resource:    at.Resource,
			Subresource: at.Subresource,
			Name:        at.Name,
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: at.Path, Verb: at.Verb}
	}
	return spec
}

// reviewKey identifies a review's question: everything in the spec.
func reviewKey(s *authorizationv1.SubjectAccessReviewSpec) string {
	var b strings.Builder
	field := func(v string) { b.WriteString(v); b.WriteByte(0) }
	field(s.User)
	field(s.UID)
	for _, g := range s.Groups {
		field(g)
	}
	b.WriteByte(1)
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k)
		for _, v := range s.Extra[k] {
			field(v)
		}
		b.WriteByte(1)
	}
	if r := s.ResourceAttributes; r != nil {
		for _, v := range []string{"r", r.Namespace, r.Verb, r.Group, r.Version, r.Resource, r.Subresource, r.Name} {
			field(v)
		}
	}
	if n := s.NonResourceAttributes; n != nil {
		field("n")
		field(n.Path)
		field(n.Verb)
	}
	return b.String()
}
