package cluster

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
)

// installMultusCRD installs the NetworkAttachmentDefinition CRD, which
// VMIs on secondary networks name and the local nodes read to attach them
// as Multus does, and waits until it is served.
func installMultusCRD(ctx context.Context, cl client.Client) error {
	crds, err := deploy.NetworkAttachmentDefinitionCRDs()
	if err != nil {
		return err
	}
	objs := make([]client.Object, 0, len(crds))
	for _, crd := range crds {
		objs = append(objs, crd)
	}
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		return fmt.Errorf("cluster: NetworkAttachmentDefinition CRD: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := deploy.WaitEstablished(wait, cl, crds); err != nil {
		return fmt.Errorf("cluster: NetworkAttachmentDefinition CRD: %w", err)
	}
	return nil
}
