package spec

import (
	"encoding/base64"
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// cloudInitMaxLen bounds inline cloud-init data, as KubeVirt does: the whole
// object is distributed to nodes on every change, so larger data belongs in
// a Secret (userDataSecretRef / networkDataSecretRef).
const cloudInitMaxLen = 2048

func validateVolumes(c *config, p *field.Path, volumes []virtv1.Volume) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(volumes))
	serviceAccounts := 0
	for i := range volumes {
		v := &volumes[i]
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), "volume name is required"))
		case seen[v.Name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		seen[v.Name] = true

		if n := countVolumeSources(&v.VolumeSource); n != 1 {
			errs = append(errs, field.Invalid(vp, n, "must have exactly one volume source"))
		}
		errs = append(errs, validateVolumeSource(vp, v)...)
		if v.HostDisk != nil && !c.featureGates[FeatureGateHostDisk] {
			errs = append(errs, field.Forbidden(vp.Child("hostDisk"), "HostDisk feature gate is not enabled"))
		}
		if v.ServiceAccount != nil {
			serviceAccounts++
			if serviceAccounts == 2 {
				errs = append(errs, field.Forbidden(vp.Child("serviceAccount"), "at most one serviceAccount volume is allowed"))
			}
		}
	}
	return errs
}

func countVolumeSources(s *virtv1.VolumeSource) int {
	n := 0
	for _, set := range []bool{
		s.HostDisk != nil, s.PersistentVolumeClaim != nil, s.CloudInitNoCloud != nil, s.CloudInitConfigDrive != nil,
		s.Sysprep != nil, s.ContainerDisk != nil, s.Ephemeral != nil, s.EmptyDisk != nil, s.DataVolume != nil,
		s.ConfigMap != nil, s.Secret != nil, s.DownwardAPI != nil, s.ServiceAccount != nil, s.DownwardMetrics != nil,
		s.MemoryDump != nil, s.ContainerPath != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

func validateVolumeSource(vp *field.Path, v *virtv1.Volume) field.ErrorList {
	var errs field.ErrorList
	if cd := v.ContainerDisk; cd != nil {
		if cd.Image == "" {
			errs = append(errs, field.Required(vp.Child("containerDisk", "image"), "container disk image is required"))
		}
		if cd.Path != "" {
			errs = append(errs, validateAbsPath(vp.Child("containerDisk", "path"), cd.Path)...)
		}
		errs = append(errs, validatePullPolicy(vp.Child("containerDisk", "imagePullPolicy"), cd.ImagePullPolicy)...)
	}
	if c := v.PersistentVolumeClaim; c != nil && c.ClaimName == "" {
		errs = append(errs, field.Required(vp.Child("persistentVolumeClaim", "claimName"), "claim name is required"))
	}
	if e := v.Ephemeral; e != nil && (e.PersistentVolumeClaim == nil || e.PersistentVolumeClaim.ClaimName == "") {
		errs = append(errs, field.Required(vp.Child("ephemeral", "persistentVolumeClaim", "claimName"), "claim name is required"))
	}
	if dv := v.DataVolume; dv != nil && dv.Name == "" {
		errs = append(errs, field.Required(vp.Child("dataVolume", "name"), "data volume name is required"))
	}
	if e := v.EmptyDisk; e != nil && e.Capacity.Sign() <= 0 {
		errs = append(errs, field.Invalid(vp.Child("emptyDisk", "capacity"), e.Capacity.String(), "must be greater than 0"))
	}
	if cm := v.ConfigMap; cm != nil && cm.Name == "" {
		errs = append(errs, field.Required(vp.Child("configMap", "name"), "config map name is required"))
	}
	if sec := v.Secret; sec != nil && sec.SecretName == "" {
		errs = append(errs, field.Required(vp.Child("secret", "secretName"), "secret name is required"))
	}
	if sa := v.ServiceAccount; sa != nil && sa.ServiceAccountName == "" {
		errs = append(errs, field.Required(vp.Child("serviceAccount", "serviceAccountName"), "service account name is required"))
	}
	if sp := v.Sysprep; sp != nil {
		if (sp.Secret == nil) == (sp.ConfigMap == nil) {
			errs = append(errs, field.Invalid(vp.Child("sysprep"), "", "must have exactly one of secret, configMap"))
		}
	}
	if hd := v.HostDisk; hd != nil {
		hp := vp.Child("hostDisk")
		if hd.Path == "" {
			errs = append(errs, field.Required(hp.Child("path"), "host disk path is required"))
		} else {
			// The launcher pod mounts the path's folder and the image is
			// its file there: a path with ".." or naming "/" has none.
			errs = append(errs, validateAbsPath(hp.Child("path"), hd.Path)...)
		}
		switch hd.Type {
		case virtv1.HostDiskExists:
			if !hd.Capacity.IsZero() {
				errs = append(errs, field.Invalid(hp.Child("capacity"), hd.Capacity.String(), "is only allowed with type DiskOrCreate"))
			}
		case virtv1.HostDiskExistsOrCreate:
		default:
			errs = append(errs, field.NotSupported(hp.Child("type"), hd.Type, []string{"Disk", "DiskOrCreate"}))
		}
	}
	if ci := v.CloudInitNoCloud; ci != nil {
		errs = append(errs, validateCloudInit(vp.Child("cloudInitNoCloud"), ci.UserDataSecretRef, ci.UserData, ci.UserDataBase64,
			ci.NetworkDataSecretRef, ci.NetworkData, ci.NetworkDataBase64)...)
	}
	if ci := v.CloudInitConfigDrive; ci != nil {
		errs = append(errs, validateCloudInit(vp.Child("cloudInitConfigDrive"), ci.UserDataSecretRef, ci.UserData, ci.UserDataBase64,
			ci.NetworkDataSecretRef, ci.NetworkData, ci.NetworkDataBase64)...)
	}
	return errs
}

func validatePullPolicy(p *field.Path, v k8sv1.PullPolicy) field.ErrorList {
	switch v {
	case "", k8sv1.PullAlways, k8sv1.PullIfNotPresent, k8sv1.PullNever:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, []string{"Always", "IfNotPresent", "Never"})}
}

// validateCloudInit is KubeVirt's: one source each for user and network
// data, valid base64, inline data within cloudInitMaxLen, and at least one.
func validateCloudInit(p *field.Path, userRef *k8sv1.LocalObjectReference, user, user64 string,
	netRef *k8sv1.LocalObjectReference, net, net64 string) field.ErrorList {
	var errs field.ErrorList
	userN, userLen := 0, 0
	netN, netLen := 0, 0
	if userRef != nil && userRef.Name != "" {
		userN++
	}
	if user64 != "" {
		userN++
		b, err := base64.StdEncoding.DecodeString(user64)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("userDataBase64"), "", "is not valid base64"))
		}
		userLen = len(b)
	}
	if user != "" {
		userN++
		userLen = len(user)
	}
	if netRef != nil && netRef.Name != "" {
		netN++
	}
	if net64 != "" {
		netN++
		b, err := base64.StdEncoding.DecodeString(net64)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("networkDataBase64"), "", "is not valid base64"))
		}
		netLen = len(b)
	}
	if net != "" {
		netN++
		netLen = len(net)
	}
	if userN > 1 {
		errs = append(errs, field.Invalid(p, userN, "must have only one of userData, userDataBase64, secretRef"))
	}
	if netN > 1 {
		errs = append(errs, field.Invalid(p, netN, "must have only one of networkData, networkDataBase64, networkDataSecretRef"))
	}
	if userLen > cloudInitMaxLen {
		errs = append(errs, field.TooLong(p.Child("userData"), "", cloudInitMaxLen))
	}
	if netLen > cloudInitMaxLen {
		errs = append(errs, field.TooLong(p.Child("networkData"), "", cloudInitMaxLen))
	}
	if userN == 0 && netN == 0 {
		errs = append(errs, field.Required(p, fmt.Sprintf("must have user data or network data (%s)", "userData, userDataBase64, secretRef, networkData, networkDataBase64 or networkDataSecretRef")))
	}
	return errs
}

// validateFilesystems checks virtiofs filesystems: each names a volume that
// virtiofs can share, and does not also appear as a disk.
func validateFilesystems(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	fp := p.Child("domain", "devices", "filesystems")
	seen := map[string]bool{}
	for i := range s.Domain.Devices.Filesystems {
		fs := &s.Domain.Devices.Filesystems[i]
		ip := fp.Index(i)
		if fs.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), "filesystem name is required"))
			continue
		}
		if seen[fs.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), fs.Name))
		}
		seen[fs.Name] = true
		if fs.Virtiofs == nil {
			errs = append(errs, field.Required(ip.Child("virtiofs"), "virtiofs is the only filesystem type"))
		}
		for j := range s.Domain.Devices.Disks {
			if s.Domain.Devices.Disks[j].Name == fs.Name {
				errs = append(errs, field.Duplicate(ip.Child("name"), fs.Name))
			}
		}
		var vol *virtv1.Volume
		for j := range s.Volumes {
			if s.Volumes[j].Name == fs.Name {
				vol = &s.Volumes[j]
				break
			}
		}
		switch {
		case vol == nil:
			errs = append(errs, field.NotFound(ip.Child("name"), fs.Name))
		case vol.PersistentVolumeClaim == nil && vol.DataVolume == nil && vol.ConfigMap == nil &&
			vol.Secret == nil && vol.ServiceAccount == nil && vol.DownwardAPI == nil:
			errs = append(errs, field.Invalid(ip.Child("name"), fs.Name,
				"virtiofs can share persistentVolumeClaim, dataVolume, configMap, secret, serviceAccount and downwardAPI volumes only"))
		}
	}
	return errs
}
