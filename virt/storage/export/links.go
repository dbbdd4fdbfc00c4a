package export

import (
	"strings"

	exportv1 "kubevirt.io/api/export/v1beta1"
)

// Links returns the status.links entry of an export whose server is
// reached at base (https://host[/prefix], no trailing slash) and
// trusted through the PEM certificate cert, serving vols; vmManifests adds
// the manifest of the whole VM (VM and snapshot exports), and every export
// lists its auth-header Secret manifest. a says which manifests' paths
// (internal or external) the entry names.
func Links(base, cert string, a Audience, vols []Volume, vmManifests bool) *exportv1.VirtualMachineExportLink {
	base = strings.TrimSuffix(base, "/")
	l := &exportv1.VirtualMachineExportLink{Cert: strings.TrimSpace(cert)}
	for _, v := range vols {
		e := exportv1.VirtualMachineExportVolume{Name: v.Claim}
		if v.Name != "" {
			e.Name = v.Name
		}
		for _, f := range Formats(v) {
			f.Url = base + f.Url
			e.Formats = append(e.Formats, f)
		}
		l.Volumes = append(l.Volumes, e)
	}
	if vmManifests {
		l.Manifests = append(l.Manifests, exportv1.VirtualMachineExportManifest{Type: exportv1.AllManifests, Url: base + ManifestPath(a, exportv1.AllManifests)})
	}
	l.Manifests = append(l.Manifests, exportv1.VirtualMachineExportManifest{Type: exportv1.AuthHeader, Url: base + ManifestPath(a, exportv1.AuthHeader)})
	return l
}

// InternalBase is the base URL of export's server inside the cluster: its
// Service, on the Service's port 443.
func InternalBase(namespace, export string) string {
	return "https://" + ServiceHost(namespace, export)
}

// ServiceHost is the host name of export's Service inside the cluster,
// which its server's certificate names.
func ServiceHost(namespace, export string) string {
	return ServiceName(export) + "." + namespace + ".svc"
}

// ExternalBase is the base URL of export's server through an export proxy
// reached at host (host[:port]), in the path layout KubeVirt's export
// proxy serves.
func ExternalBase(host, namespace, export string) string {
	return "https://" + host + "/api/" + exportv1.SchemeGroupVersion.Group + "/" + exportv1.SchemeGroupVersion.Version +
		"/namespaces/" + namespace + "/virtualmachineexports/" + export
}
