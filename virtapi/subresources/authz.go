package subresources

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/frontproxy"
)

// Attributes are what one call asks to do, in RBAC's terms: verb on
// Resource/Subresource (virtualmachines/start) of object Name in Namespace,
// in API group Group and version Version (empty: this package's,
// subresources.kubevirt.io/v1).
type Attributes struct {
	Verb, Namespace, Name, Resource, Subresource string
	Group, Version                               string
}

// Authorizer decides whether a user may make a call.
type Authorizer interface {
	// Authorize returns whether u may do a, and if not, why.
	Authorize(ctx context.Context, u frontproxy.User, a Attributes) (allowed bool, reason string, err error)
}

// SubjectAccessReviewer asks the apiserver with a SubjectAccessReview, so
// RBAC (Roles granting e.g. update on virtualmachines/start in
// subresources.kubevirt.io) decides.
type SubjectAccessReviewer struct {
	// Client creates the reviews; it needs create on subjectaccessreviews.
	Client client.Client
}

var _ Authorizer = (*SubjectAccessReviewer)(nil)

// Authorize implements Authorizer.
func (s *SubjectAccessReviewer) Authorize(ctx context.Context, u frontproxy.User, a Attributes) (bool, string, error) {
	group, version := a.Group, a.Version
	if group == "" {
		group, version = Group, Version
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: group, Version: version,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		},
	}}
	if len(u.Extra) > 0 {
		sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range u.Extra {
			sar.Spec.Extra[k] = v
		}
	}
	if err := s.Client.Create(ctx, sar); err != nil {
		return false, "", fmt.Errorf("creating SubjectAccessReview for user %q, %s %s/%s: %w", u.Name, a.Verb, a.Resource, a.Subresource, err)
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}
