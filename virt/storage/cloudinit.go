package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/accesscred"
)

// Keys KubeVirt reads from a cloud-init secret (either spelling).
var (
	userDataKeys    = []string{"userdata", "userData"}
	networkDataKeys = []string{"networkdata", "networkData"}
)

// ConfigDriveMetadata is openstack/latest/meta_data.json as KubeVirt writes it.
type ConfigDriveMetadata struct {
	InstanceID    string `json:"instance_id"`
	InstanceType  string `json:"instance_type,omitempty"`
	LocalHostname string `json:"local_hostname,omitempty"`
	Hostname      string `json:"hostname,omitempty"`
	UUID          string `json:"uuid,omitempty"`
	// PublicKeys are the access credentials' SSH keys, "0", "1", ...
	PublicKeys map[string]string `json:"public_keys,omitempty"`
}

// CloudInitSecretRefs are the secrets a cloud-init volume takes its user
// data and network data from; nil when it takes them inline, or when vol
// is not a cloud-init volume.
func CloudInitSecretRefs(vol *virtv1.Volume) (user, network *corev1.LocalObjectReference) {
	switch {
	case vol.CloudInitNoCloud != nil:
		return vol.CloudInitNoCloud.UserDataSecretRef, vol.CloudInitNoCloud.NetworkDataSecretRef
	case vol.CloudInitConfigDrive != nil:
		return vol.CloudInitConfigDrive.UserDataSecretRef, vol.CloudInitConfigDrive.NetworkDataSecretRef
	}
	return nil, nil
}

// CloudInitFiles returns the files of a cloudInitNoCloud or
// cloudInitConfigDrive volume's disk, by path on the disk: for NoCloud
// meta-data, user-data and network-config; for ConfigDrive
// openstack/latest/meta_data.json, user_data and network_data.json. User
// and network data come from the secret (secrets, by name), the base64
// field or the inline field, in that order of precedence, as in KubeVirt.
// The instance ID is NAME.NAMESPACE and the host name spec.hostname, else
// the VMI's name. The SSH keys of the access credentials propagated
// through this kind of cloud-init (their Secrets in secrets too) are the
// meta-data's public-keys (NoCloud) or public_keys (ConfigDrive), "0",
// "1", ..., as KubeVirt writes them.
func CloudInitFiles(vmi *virtv1.VirtualMachineInstance, vol *virtv1.Volume, secrets map[string]map[string][]byte) (map[string][]byte, error) {
	hostname := vmi.Spec.Hostname
	if hostname == "" {
		hostname = vmi.Name
	}
	instanceID := vmi.Name + "." + vmi.Namespace
	keys, err := accesscred.CloudInitKeys(vmi.Spec.AccessCredentials, vol.CloudInitConfigDrive != nil, secrets)
	if err != nil {
		return nil, err
	}
	switch {
	case vol.CloudInitNoCloud != nil:
		s := vol.CloudInitNoCloud
		user, err := cloudInitData("user data", s.UserDataSecretRef, userDataKeys, s.UserDataBase64, s.UserData, secrets)
		if err != nil {
			return nil, err
		}
		network, err := cloudInitData("network data", s.NetworkDataSecretRef, networkDataKeys, s.NetworkDataBase64, s.NetworkData, secrets)
		if err != nil {
			return nil, err
		}
		meta := fmt.Appendf(nil, "instance-id: %s\nlocal-hostname: %s\n", instanceID, hostname)
		if len(keys) > 0 {
			meta = append(meta, "public-keys:\n"...)
			for i, k := range keys {
				q, _ := json.Marshal(k) // a JSON string is a YAML scalar, whatever the key's comment holds
				meta = fmt.Appendf(meta, "  \"%d\": %s\n", i, q)
			}
		}
		files := map[string][]byte{
			"meta-data": meta,
			"user-data": user,
		}
		if network != nil {
			files["network-config"] = network
		}
		return files, nil
	case vol.CloudInitConfigDrive != nil:
		s := vol.CloudInitConfigDrive
		user, err := cloudInitData("user data", s.UserDataSecretRef, userDataKeys, s.UserDataBase64, s.UserData, secrets)
		if err != nil {
			return nil, err
		}
		network, err := cloudInitData("network data", s.NetworkDataSecretRef, networkDataKeys, s.NetworkDataBase64, s.NetworkData, secrets)
		if err != nil {
			return nil, err
		}
		uuid := string(vmi.UID)
		if fw := vmi.Spec.Domain.Firmware; fw != nil && fw.UUID != "" {
			uuid = string(fw.UUID)
		}
		md := ConfigDriveMetadata{InstanceID: instanceID, LocalHostname: hostname, Hostname: hostname, UUID: uuid}
		for i, k := range keys {
			if md.PublicKeys == nil {
				md.PublicKeys = map[string]string{}
			}
			md.PublicKeys[strconv.Itoa(i)] = k
		}
		meta, err := json.Marshal(md)
		if err != nil {
			return nil, err
		}
		files := map[string][]byte{
			"openstack/latest/meta_data.json": meta,
			"openstack/latest/user_data":      user,
		}
		if network != nil {
			files["openstack/latest/network_data.json"] = network
		}
		return files, nil
	}
	return nil, fmt.Errorf("volume %q is not a cloud-init volume", vol.Name)
}

// cloudInitData resolves one piece of cloud-init data; nil when none is given.
func cloudInitData(what string, ref *corev1.LocalObjectReference, keys []string, b64, inline string, secrets map[string]map[string][]byte) ([]byte, error) {
	switch {
	case ref != nil && ref.Name != "":
		data, ok := secrets[ref.Name]
		if !ok {
			return nil, fmt.Errorf("%s: secret %q is not available in the pod", what, ref.Name)
		}
		for _, k := range keys {
			if v, ok := data[k]; ok {
				return v, nil
			}
		}
		return nil, fmt.Errorf("%s: secret %q has no key %q or %q", what, ref.Name, keys[0], keys[1])
	case b64 != "":
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("%s: base64: %w", what, err)
		}
		return b, nil
	case inline != "":
		return []byte(inline), nil
	}
	return nil, nil
}
