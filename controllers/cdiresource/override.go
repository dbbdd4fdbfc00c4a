package cdiresource

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CloneStrategyOverride is the active CDI resource's
// spec.cloneStrategyOverride: the clone strategy of every claim, over its
// StorageProfile's. It is nil when unset, when there is no CDI resource,
// and when the API has no CDI kind.
func CloneStrategyOverride(ctx context.Context, c client.Reader) (*cdiv1.CDICloneStrategy, error) {
	list := &cdiv1.CDIList{}
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the CDI resource: %w", err)
	}
	active, _ := Active(list.Items)
	if active == nil || active.Spec.CloneStrategyOverride == nil {
		return nil, nil
	}
	s := *active.Spec.CloneStrategyOverride
	return &s, nil
}
