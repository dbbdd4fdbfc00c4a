package vmi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/migrate"
)

// AttachPodFor renders the attachment pod of vol, a hotpluggable claim or
// data volume of vmi, next to its launcher pod launcher: KubeVirt's
// hp-volume pod, one per volume. It runs the launcher image's
// `virt-launcher --hold` on launcher's node (a required node affinity),
// is controlled by launcher (so it goes with it) and mounts the claim at
// contract.HotplugMountDir/<volume>, as a folder or, when block, as a
// device. The node attaches and mounts the claim for it as for any pod;
// the handler then binds the image into the launcher pod.
func AttachPodFor(vmi *virtv1.VirtualMachineInstance, launcher *corev1.Pod, vol *virtv1.Volume, block bool, opts PodOptions) (*corev1.Pod, error) {
	claim := migrate.ClaimOf(vol)
	switch {
	case opts.LauncherImage == "":
		return nil, errors.New("vmi: PodOptions.LauncherImage must be set")
	case claim == "":
		return nil, errors.New("vmi: attachment pod of volume " + vol.Name + ": not a claim or data volume")
	case launcher.Spec.NodeName == "":
		return nil, errors.New("vmi: attachment pod of volume " + vol.Name + ": the launcher pod is not on a node yet")
	}
	yes, no, zero := true, false, int64(0)
	user := int64(contract.QEMUUser)
	where := path.Join(contract.HotplugMountDir, vol.Name)
	c := corev1.Container{
		Name:            contract.HotplugContainer,
		Image:           opts.LauncherImage,
		ImagePullPolicy: opts.LauncherPullPolicy,
		Command:         []string{contract.Binary, "--" + contract.FlagHold},
		// KubeVirt's figures for its attachment pods.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("2M")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("80M")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			RunAsNonRoot:             &yes,
			RunAsUser:                &user,
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	volumes := []corev1.Volume{{Name: vol.Name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	if block {
		// The device node is made in an emptyDir, where the handler
		// reads its numbers on the node (contract.AttachPodDevice).
		c.VolumeDevices = []corev1.VolumeDevice{{Name: vol.Name, DevicePath: where}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: contract.HotplugDeviceVolume, MountPath: contract.HotplugMountDir}}
		volumes = append(volumes, corev1.Volume{Name: contract.HotplugDeviceVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: vol.Name, MountPath: where}}
	}
	group := int64(contract.QEMUGroup)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      AttachPodName(launcher.UID, vol.Name),
			Namespace: vmi.Namespace,
			Labels:    map[string]string{virtv1.AppLabel: contract.HotplugLabelValue},
			Annotations: map[string]string{
				contract.OwnerVMINameAnnotation: vmi.Name,
				contract.OwnerVMIUIDAnnotation:  string(vmi.UID),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: launcher.Name, UID: launcher.UID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{launcher.Spec.NodeName}}},
				}}},
			}},
			Tolerations:                   append([]corev1.Toleration(nil), launcher.Spec.Tolerations...),
			PriorityClassName:             launcher.Spec.PriorityClassName,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  &no,
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: &group},
			Containers:                    []corev1.Container{c},
			Volumes:                       volumes,
		},
	}, nil
}

// AttachPodName is the name of the attachment pod of volume next to the
// launcher pod whose UID is launcher: KubeVirt's prefix and a hash of both,
// so that a second create of the same pod (a reconcile that ran before the
// cache saw the first) fails instead of making another.
func AttachPodName(launcher types.UID, volume string) string {
	sum := sha256.Sum256([]byte(string(launcher) + "/" + volume))
	return contract.HotplugPodPrefix + hex.EncodeToString(sum[:5])
}

// AttachedVolume is the volume an attachment pod holds: the name of its one
// claim volume (the VMI's volume; a Block claim's pod also has the emptyDir
// contract.HotplugDeviceVolume), "" for a pod that is not an attachment pod.
func AttachedVolume(p *corev1.Pod) string {
	if p.Labels[virtv1.AppLabel] != contract.HotplugLabelValue {
		return ""
	}
	name := ""
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && name == "":
			name = v.Name
		case v.PersistentVolumeClaim != nil:
			return "" // one claim per attachment pod
		case v.Name != contract.HotplugDeviceVolume || v.EmptyDir == nil:
			return ""
		}
	}
	return name
}
