package vmi

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/accesscred"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

// serviceAccount is how the pod's service account is set.
type serviceAccount struct {
	name      string
	automount bool
}

// podVolumes returns the pod volumes and compute mounts that back the VMI's
// volumes. Pod volumes are named after the VMI's volumes.
//
//   - containerDisk: an image volume (Kubernetes 1.33+) at
//     /var/run/kubevirt/container-disks/<volume>, read-only; the
//     node mounts the image (in virt-local, the local node);
//   - persistentVolumeClaim and dataVolume (whose PVC has the DataVolume's
//     name): a persistentVolumeClaim volume at /var/run/kubevirt-private/vmi-disks/<volume>,
//     or, when block names the volume (its claim is in Block mode), a
//     volumeDevice at /dev/<volume>, as KubeVirt's;
//   - configMap, secret, downwardAPI: the same pod volume at
//     /var/run/kubevirt-private/{config-map,secret,downwardapi}-disks/<volume>;
//   - hostDisk: a hostPath volume of the path's folder (type Directory, or
//     DirectoryOrCreate for DiskOrCreate) at
//     /var/run/kubevirt-private/vmi-disks/<volume>, as in KubeVirt;
//   - cloudInitNoCloud and cloudInitConfigDrive with userDataSecretRef or
//     networkDataSecretRef: a secret volume each, <volume>-udata and
//     <volume>-ndata, at /var/run/kubevirt-private/secret/<volume>/{userdata,
//     networkdata} (storage.Layout.CloudInitSecretDir), read-only;
//   - accessCredentials: each Secret once, as the volume <secret>-access-cred
//     at /var/run/kubevirt-private/secret/<secret>-access-cred, read-only
//     (virt/accesscred);
//   - serviceAccount: the pod runs as that service account with its token
//     automounted (/var/run/secrets/kubernetes.io/serviceaccount), which is
//     where KubeVirt's launcher reads it too; without one, no token is mounted.
//
// Hotpluggable claims and data volumes are not the launcher pod's: as in
// KubeVirt, an attachment pod mounts each once the VMI runs (attachPod),
// also those the VMI starts with. Other kinds (cloud-init data given
// inline, emptyDisk, ephemeral, sysprep, memory dumps) need no pod volume
// here or are not handled yet; the handler prepares them in the VMI's
// folder.
func podVolumes(vmi *virtv1.VirtualMachineInstance, block map[string]bool) ([]corev1.Volume, []corev1.VolumeMount, []corev1.VolumeDevice, serviceAccount, error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	var devices []corev1.VolumeDevice
	sa := serviceAccount{}
	add := func(name, dir string, src corev1.VolumeSource, ro bool) {
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(dir, name), ReadOnly: ro})
	}
	claim := func(name, claim string, ro bool) {
		src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: ro}}
		if !block[name] {
			add(name, path.Join(privatePath, "vmi-disks"), src, ro)
			return
		}
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		devices = append(devices, corev1.VolumeDevice{Name: name, DevicePath: path.Join(storage.DefaultLayout().DevDir, name)})
	}
	for i, v := range vmi.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		if spec.Hotpluggable(&v) {
			continue // an attachment pod's (attachPod), once the VMI runs
		}
		switch {
		case v.ContainerDisk != nil:
			if v.ContainerDisk.Image == "" {
				return nil, nil, nil, sa, fmt.Errorf("%w: %s.containerDisk.image: must be set", ErrInvalidVMI, field)
			}
			add(v.Name, containerDiskPath, corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
				Reference: v.ContainerDisk.Image, PullPolicy: v.ContainerDisk.ImagePullPolicy}}, true)
		case v.PersistentVolumeClaim != nil:
			claim(v.Name, v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly)
		case v.DataVolume != nil:
			claim(v.Name, v.DataVolume.Name, false)
		case v.ConfigMap != nil:
			add(v.Name, path.Join(privatePath, "config-map-disks"), corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: v.ConfigMap.LocalObjectReference, Optional: v.ConfigMap.Optional}}, true)
		case v.Secret != nil:
			add(v.Name, path.Join(privatePath, "secret-disks"), corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: v.Secret.SecretName, Optional: v.Secret.Optional}}, true)
		case v.DownwardAPI != nil:
			add(v.Name, path.Join(privatePath, "downwardapi-disks"), corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: v.DownwardAPI.Fields}}, true)
		case v.HostDisk != nil:
			// The folder of the path, at the volume's claim folder, where
			// the handler finds the image by its name (as KubeVirt mounts a
			// hostDisk): the pod reaches that folder of the node only.
			if _, ok := storage.HostDiskFile(v.HostDisk.Path); !path.IsAbs(v.HostDisk.Path) || !ok {
				return nil, nil, nil, sa, fmt.Errorf("%w: %s.hostDisk.path: %q is not an absolute path of a file", ErrInvalidVMI, field, v.HostDisk.Path)
			}
			t := corev1.HostPathDirectory
			if v.HostDisk.Type == virtv1.HostDiskExistsOrCreate {
				t = corev1.HostPathDirectoryOrCreate
			}
			add(v.Name, path.Join(privatePath, "vmi-disks"), corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: path.Dir(path.Clean(v.HostDisk.Path)), Type: &t}}, false)
		case v.CloudInitNoCloud != nil, v.CloudInitConfigDrive != nil:
			// Secrets reach the handler through the pod, as in KubeVirt:
			// it reads them where they are mounted and holds no access to
			// Secrets of its own.
			user, network := storage.CloudInitSecretRefs(&v)
			for _, s := range []struct {
				ref     *corev1.LocalObjectReference
				suffix  string
				network bool
			}{{user, "-udata", false}, {network, "-ndata", true}} {
				if s.ref == nil || s.ref.Name == "" {
					continue
				}
				name := v.Name + s.suffix
				vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.ref.Name}}})
				mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: storage.DefaultLayout().CloudInitSecretDir(v.Name, s.network), ReadOnly: true})
			}
		case v.ServiceAccount != nil:
			if sa.name != "" {
				return nil, nil, nil, sa, fmt.Errorf("%w: %s.serviceAccount: only one serviceAccount volume is allowed", ErrInvalidVMI, field)
			}
			sa = serviceAccount{name: v.ServiceAccount.ServiceAccountName, automount: true}
		}
	}
	// Access credentials' Secrets, for the handler to set through the
	// guest agent (virt/accesscred), each mounted once, as KubeVirt does.
	for _, secret := range accesscred.Secrets(vmi.Spec.AccessCredentials) {
		name := accesscred.VolumeName(secret)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: accesscred.Dir(secret), ReadOnly: true})
	}
	return vols, mounts, devices, sa, nil
}
