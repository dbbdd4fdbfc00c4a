package deploy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply creates each object, or replaces an existing one's content with
// it (a Namespace that exists is left alone; a Service keeps its cluster
// IP). Objects must carry their apiVersion and kind.
func Apply(ctx context.Context, cl client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		if err := apply(ctx, cl, obj); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, cl client.Client, obj client.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	what := fmt.Sprintf("%s %s", gvk.Kind, client.ObjectKeyFromObject(obj))
	err := cl.Create(ctx, obj.DeepCopyObject().(client.Object))
	switch {
	case err == nil:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("deploy: creating %s: %w", what, err)
	}
	if _, ok := obj.(*corev1.Namespace); ok {
		return nil
	}
	existing := obj.DeepCopyObject().(client.Object)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("deploy: reading %s: %w", what, err)
	}
	upd := obj.DeepCopyObject().(client.Object)
	upd.SetResourceVersion(existing.GetResourceVersion())
	if svc, ok := upd.(*corev1.Service); ok {
		old := existing.(*corev1.Service)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	if err := cl.Update(ctx, upd); err != nil {
		return fmt.Errorf("deploy: updating %s: %w", what, err)
	}
	return nil
}
