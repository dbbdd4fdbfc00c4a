package admission

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// WithCloneAuthorization makes the webhook authorize clones from another
// namespace as CDI does: the user creating a DataVolume (or a VM whose
// dataVolumeTemplates clone) needs create on datavolumes/source in
// cdi.kubevirt.io in the source claim's namespace. c asks RBAC with a
// SubjectAccessReview and reads the DataSources sourceRefs name. Without
// it, such clones are not checked.
func WithCloneAuthorization(c client.Client) ValidatorOption {
	return func(v *Validator) { v.clones = c }
}

// authorizeClone returns the error of a DataVolume spec at path, to be
// made in namespace by user, whose source is a claim of another namespace
// the user may not clone.
func (v *Validator) authorizeClone(ctx context.Context, user authenticationv1.UserInfo, namespace, name string, spec *cdiv1.DataVolumeSpec, path *field.Path) (field.ErrorList, error) {
	if v.clones == nil {
		return nil, nil
	}
	dv := &cdiv1.DataVolume{}
	dv.Namespace, dv.Name, dv.Spec = namespace, name, *spec
	src, ferr := dvspec.SourceOf(dv)
	if ferr != nil || !src.IsClone() {
		return nil, nil
	}
	from, at := "", path
	switch {
	case src.Claim != nil:
		from, at = src.Claim.Namespace, path.Child("source", "pvc", "namespace")
	case src.Snapshot != nil:
		from, at = src.Snapshot.Namespace, path.Child("source", "snapshot", "namespace")
	case src.Ref != nil:
		from, at = *src.Ref.Namespace, path.Child("sourceRef", "namespace")
		ds := &cdiv1.DataSource{}
		switch err := v.clones.Get(ctx, client.ObjectKey{Namespace: *src.Ref.Namespace, Name: src.Ref.Name}, ds); {
		case apierrors.IsNotFound(err):
			// Its namespace is checked now; the claim's, once it exists,
			// by nobody: as CDI, which checks when the DataVolume is made.
		case err != nil:
			return nil, fmt.Errorf("reading DataSource %s/%s: %w", *src.Ref.Namespace, src.Ref.Name, err)
		default:
			switch named, err := dvspec.DataSourceSource(ds); {
			case err != nil:
			case named.Claim != nil:
				from = named.Claim.Namespace
			case named.Snapshot != nil:
				from = named.Snapshot.Namespace
			}
		}
	}
	if from == namespace {
		return nil, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: from, Verb: "create",
			Group: cdiv1.SchemeGroupVersion.Group, Resource: "datavolumes", Subresource: "source"},
	}}
	if len(user.Extra) > 0 {
		sar.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, val := range user.Extra {
			sar.Spec.Extra[k] = authorizationv1.ExtraValue(val)
		}
	}
	if err := v.clones.Create(ctx, sar); err != nil {
		return nil, fmt.Errorf("asking whether %q may clone from namespace %s: %w", user.Username, from, err)
	}
	if sar.Status.Allowed {
		return nil, nil
	}
	return field.ErrorList{field.Forbidden(at, fmt.Sprintf("user %q may not clone claims of namespace %q: that needs create on "+
		"datavolumes/source in API group cdi.kubevirt.io there (CDI's cdi.kubevirt.io:edit ClusterRole grants it)", user.Username, from))}, nil
}
