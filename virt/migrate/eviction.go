package evacuation

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultKubeVirtNamespace is where the KubeVirt CR is read by default.
const DefaultKubeVirtNamespace = "kubevirt"

// Strategy is the eviction strategy that applies to vmi: its own, else
// cluster's (the KubeVirt CR's), else None.
func Strategy(vmi *virtv1.VirtualMachineInstance, cluster *virtv1.EvictionStrategy) virtv1.EvictionStrategy {
	switch {
	case vmi.Spec.EvictionStrategy != nil:
		return *vmi.Spec.EvictionStrategy
	case cluster != nil:
		return *cluster
	}
	return virtv1.EvictionStrategyNone
}

// clusterStrategy reads the KubeVirt CR's evictionStrategy in namespace;
// nil when there is no CR or it sets none.
func clusterStrategy(ctx context.Context, r client.Reader, namespace string) (*virtv1.EvictionStrategy, error) {
	var kvs virtv1.KubeVirtList
	if err := r.List(ctx, &kvs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("reading the KubeVirt CR in namespace %s: %w", namespace, err)
	}
	if len(kvs.Items) == 0 {
		return nil, nil
	}
	return kvs.Items[0].Spec.Configuration.EvictionStrategy, nil
}

// Decision is what the webhook answers an eviction of a launcher pod.
type Decision struct {
	// Allow lets the eviction through.
	Allow bool
	// Evacuate records the drain in the VMI's status.evacuationNodeName
	// (the pod's node) before refusing.
	Evacuate bool
	// Message says why it is refused.
	Message string
}

// Decide is the webhook's answer for evicting pod, a launcher pod of vmi
// (nil: the VMI is gone), under strategy. It is pure.
func Decide(vmi *virtv1.VirtualMachineInstance, podNode string, podEnded bool, strategy virtv1.EvictionStrategy) Decision {
	switch {
	case vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil || podEnded:
		return Decision{Allow: true}
	case podNode == "" || podNode != vmi.Status.NodeName:
		// Not the pod that holds the guest: a migration's target, or the
		// source of a completed one.
		return Decision{Allow: true}
	}
	migratable := true
	reason := ""
	for _, c := range vmi.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceIsMigratable && c.Status == "False" {
			migratable, reason = false, c.Reason+": "+c.Message
		}
	}
	name := vmi.Namespace + "/" + vmi.Name
	switch strategy {
	case virtv1.EvictionStrategyLiveMigrate:
		if !migratable {
			return Decision{Message: fmt.Sprintf("VMI %s is configured with an eviction strategy but is not live-migratable: %s", name, reason)}
		}
		return Decision{Evacuate: true, Message: fmt.Sprintf("Eviction triggered evacuation of VMI %s", name)}
	case virtv1.EvictionStrategyLiveMigrateIfPossible:
		if !migratable {
			return Decision{Allow: true}
		}
		return Decision{Evacuate: true, Message: fmt.Sprintf("Eviction triggered evacuation of VMI %s", name)}
	case virtv1.EvictionStrategyExternal:
		return Decision{Evacuate: true, Message: fmt.Sprintf("Eviction of VMI %s is handled by an external controller (evictionStrategy External)", name)}
	}
	return Decision{Allow: true}
}
