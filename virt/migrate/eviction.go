package migrate

import (
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
)

// EvictionStrategy is the eviction strategy that applies to vmi: its own,
// else cluster's (the KubeVirt CR's, [ClusterEvictionStrategy]), else None.
func EvictionStrategy(vmi *virtv1.VirtualMachineInstance, cluster *virtv1.EvictionStrategy) virtv1.EvictionStrategy {
	switch {
	case vmi.Spec.EvictionStrategy != nil:
		return *vmi.Spec.EvictionStrategy
	case cluster != nil:
		return *cluster
	}
	return virtv1.EvictionStrategyNone
}

// ClusterEvictionStrategy is kv's spec.configuration.evictionStrategy; nil
// when there is no CR (kv is nil) or it sets none.
func ClusterEvictionStrategy(kv *virtv1.KubeVirt) *virtv1.EvictionStrategy {
	if kv == nil {
		return nil
	}
	return kv.Spec.Configuration.EvictionStrategy
}

// EvictionDecision is what the pod eviction webhook answers an eviction of
// a launcher pod.
type EvictionDecision struct {
	// Allow lets the eviction through.
	Allow bool
	// Evacuate records the drain in the VMI's status.evacuationNodeName
	// (the pod's node) before refusing.
	Evacuate bool
	// Message says why it is refused.
	Message string
}

// DecideEviction is the pod eviction webhook's answer for evicting a
// launcher pod of vmi (nil: the VMI is gone) that runs on podNode (podEnded:
// it has ended), under strategy. It is pure.
func DecideEviction(vmi *virtv1.VirtualMachineInstance, podNode string, podEnded bool, strategy virtv1.EvictionStrategy) EvictionDecision {
	switch {
	case vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil || podEnded:
		return EvictionDecision{Allow: true}
	case podNode == "" || podNode != vmi.Status.NodeName:
		// Not the pod that holds the guest: a migration's target, or the
		// source of a completed one.
		return EvictionDecision{Allow: true}
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
			return EvictionDecision{Message: fmt.Sprintf("VMI %s is configured with an eviction strategy but is not live-migratable: %s", name, reason)}
		}
		return EvictionDecision{Evacuate: true, Message: fmt.Sprintf("Eviction triggered evacuation of VMI %s", name)}
	case virtv1.EvictionStrategyLiveMigrateIfPossible:
		if !migratable {
			return EvictionDecision{Allow: true}
		}
		return EvictionDecision{Evacuate: true, Message: fmt.Sprintf("Eviction triggered evacuation of VMI %s", name)}
	case virtv1.EvictionStrategyExternal:
		return EvictionDecision{Evacuate: true, Message: fmt.Sprintf("Eviction of VMI %s is handled by an external controller (evictionStrategy External)", name)}
	}
	return EvictionDecision{Allow: true}
}
