package nodeapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher is what Publish needs of a client.
type Patcher interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// Publish sets address, the base URL of node's handler, as node's
// HandlerAddressAnnotation (a merge patch, leaving the other annotations
// alone), for people and tools (and AnnotationLocator, in setups that
// trust every node; virt-api uses PodLocator). An address ParseAddress
// refuses is not written.
func Publish(ctx context.Context, c Patcher, node, address string) error {
	if _, err := ParseAddress(address); err != nil {
		return err
	}
	n := &corev1.Node{}
	n.Name = node
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, HandlerAddressAnnotation, address)
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("publish the node API address on node %s: %w", node, err)
	}
	return nil
}
