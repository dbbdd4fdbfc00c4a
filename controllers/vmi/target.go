package vmi

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
)

// Every launcher pod of a VMI mounts its own folder (an emptyDir) at the
// same place, RunDir(vmi), so that every path in the domain (console
// sockets and log, libvirt's socket) is the same on both ends of a
// migration while the two launchers, even on one machine, never share a
// file.

// RoleOf is the role of launcher pod pod of vmi, which names the pod's
// folder to the handlers: the migration's UID for a migration's target pod
// (labelled kubevirt.io/migrationJobUID), the VMI's UID for the VMI's own,
// "" for a provisioning pod (IsProvisioningPod), which holds no folder.
func RoleOf(vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod) types.UID {
	if IsProvisioningPod(pod) {
		return ""
	}
	if m := pod.Labels[virtv1.MigrationJobLabel]; m != "" {
		return types.UID(m)
	}
	return vmi.UID
}

// IsTargetPod reports whether pod is a migration's target launcher pod.
func IsTargetPod(pod *corev1.Pod) bool { return pod.Labels[virtv1.MigrationJobLabel] != "" }

// RenderTargetPod returns the target launcher pod of migration mig of vmi,
// which runs on sourceNode: vmi's launcher pod (RenderPod) labelled with
// the migration's UID (kubevirt.io/migrationJobUID) and the VMI's name
// (kubevirt.io/vmi-name), the migration's
// addedNodeSelector added to its node selector, and a required node
// affinity that keeps it off sourceNode (combined with every required term
// the VMI's own affinity has). It is pure.
func RenderTargetPod(vmi *virtv1.VirtualMachineInstance, mig *virtv1.VirtualMachineInstanceMigration, sourceNode string, opts PodOptions) (*corev1.Pod, error) {
	switch {
	case mig.UID == "":
		return nil, fmt.Errorf("%w: VirtualMachineInstanceMigration %s/%s: metadata.uid: must be set", ErrInvalidVMI, mig.Namespace, mig.Name)
	case sourceNode == "":
		return nil, errors.New("vmi: RenderTargetPod: the source node must be known")
	}
	pod, err := RenderPod(vmi, opts)
	if err != nil {
		return nil, err
	}
	pod.Labels[virtv1.MigrationJobLabel] = string(mig.UID)
	pod.Labels[virtv1.MigrationSelectorLabel] = vmi.Name
	for k, v := range mig.Spec.AddedNodeSelector {
		if _, ok := pod.Spec.NodeSelector[k]; !ok {
			pod.Spec.NodeSelector[k] = v // it narrows the VMI's constraints, never overrides them
		}
	}
	notSource := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{sourceNode}}
	aff := pod.Spec.Affinity
	if aff == nil {
		aff = &corev1.Affinity{}
	}
	if aff.NodeAffinity == nil {
		aff.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		req = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	for i := range req.NodeSelectorTerms {
		t := &req.NodeSelectorTerms[i]
		t.MatchFields = append(t.MatchFields, notSource)
	}
	aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = req
	pod.Spec.Affinity = aff
	return pod, nil
}
