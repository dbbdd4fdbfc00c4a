package dvspec

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Source is a DataVolume's source as the importer takes it.
type Source struct {
	// Kind is contract.SourceHTTP, contract.SourceRegistry,
	// contract.SourceFile, contract.SourceUpload or contract.SourceBlank.
	Kind string
	// HTTP is an http source's spec.
	HTTP *cdiv1.DataVolumeSourceHTTP
	// Image is a registry source's image reference (its URL without
	// docker://).
	Image string
	// Registry is how the importer pulls Image itself (pullMethod pod,
	// CDI's default, Kind contract.SourceRegistry). Nil with pullMethod
	// node: Image is mounted into the importer pod as an image volume
	// (Kind contract.SourceFile).
	Registry *RegistryPull
	// Claim is a pvc source's claim (its namespace defaulted), whose disk
	// the importer pod copies.
	Claim *cdiv1.DataVolumeSourcePVC
	// Snapshot is a snapshot source's VolumeSnapshot (its namespace
	// defaulted), which the claim is restored from.
	Snapshot *cdiv1.DataVolumeSourceSnapshot
	// Ref is a sourceRef's DataSource (its namespace defaulted), which the
	// controller resolves into Claim or Snapshot (DataSourceSource).
	Ref *cdiv1.DataVolumeSourceRef
	// ClaimSize is a clone's source claim's size, which a spec.storage
	// without a size takes (as CDI infers it); the controller sets it.
	ClaimSize *resource.Quantity
}

// RegistryPull is what the importer needs to pull a registry source's
// image itself: names of the DataVolume's namespace's Secret (keys
// accessKeyId and secretKey) and ConfigMap of CA certificates, and the
// architecture to pick from an image index.
type RegistryPull struct {
	SecretRef, CertConfigMap, Architecture string
}

// IsClone says whether the source is another claim, named or through a
// DataSource: the DataVolume then goes through CDI's clone phases.
func (s Source) IsClone() bool { return s.Claim != nil || s.Ref != nil || s.Snapshot != nil }

// SourceNamespace is the namespace of a clone's source claim or snapshot
// ("" for other sources, and for a sourceRef not resolved yet).
func (s Source) SourceNamespace() string {
	switch {
	case s.Claim != nil:
		return s.Claim.Namespace
	case s.Snapshot != nil:
		return s.Snapshot.Namespace
	}
	return ""
}

// CrossNamespace says whether a clone's source claim is in another
// namespace than the DataVolume's (ns): its disk then travels over the
// network, from a pod in the source's namespace to the DataVolume's upload
// pod, as CDI's host-assisted clone.
func (s Source) CrossNamespace(ns string) bool {
	src := s.SourceNamespace()
	return src != "" && src != ns
}

// IsUpload says whether the data comes from an upload: the DataVolume then
// goes through CDI's upload phases.
func (s Source) IsUpload() bool { return s.Kind == contract.SourceUpload }

// Describe names the source for messages and the claim's annotations.
func (s Source) Describe() string {
	switch {
	case s.HTTP != nil:
		return redact(s.HTTP.URL)
	case s.Image != "":
		return contract.RegistryScheme + s.Image
	case s.Claim != nil:
		return "claim " + s.Claim.Namespace + "/" + s.Claim.Name
	case s.Snapshot != nil:
		return "snapshot " + s.Snapshot.Namespace + "/" + s.Snapshot.Name
	case s.Ref != nil:
		return "DataSource " + *s.Ref.Namespace + "/" + s.Ref.Name
	}
	return s.Kind
}

// checksumAlgorithms are those CDI's importer verifies.
var checksumAlgorithms = []string{"md5", "sha1", "sha256", "sha512"}

// SourceOf returns the source of dv's data, or an error naming the field
// that cannot work.
func SourceOf(dv *cdiv1.DataVolume) (Source, *field.Error) {
	spec := field.NewPath("spec")
	if ref := dv.Spec.SourceRef; ref != nil {
		return sourceRef(dv, ref, spec.Child("sourceRef"))
	}
	src := dv.Spec.Source
	if src == nil {
		return Source{}, field.Required(spec.Child("source"), "a DataVolume needs a source")
	}
	path := spec.Child("source")
	switch {
	case src.HTTP != nil:
		return httpSource(src.HTTP, path.Child("http"))
	case src.Blank != nil:
		return Source{Kind: contract.SourceBlank}, nil
	case src.Registry != nil:
		return registrySource(src.Registry, path.Child("registry"))
	case src.PVC != nil:
		return claimSource(dv, src.PVC, path.Child("pvc"))
	case src.Upload != nil:
		return Source{Kind: contract.SourceUpload}, nil
	case src.Snapshot != nil:
		return snapshotSource(dv.Namespace, src.Snapshot, path.Child("snapshot"))
	}
	for _, s := range []struct {
		name string
		set  bool
	}{
		{"s3", src.S3 != nil},
		{"gcs", src.GCS != nil}, {"imageio", src.Imageio != nil}, {"vddk", src.VDDK != nil},
	} {
		if s.set {
			return Source{}, field.Invalid(path.Child(s.name), "", "this source is not supported by virtkit yet (http, registry, pvc, snapshot, upload and blank are)")
		}
	}
	return Source{}, field.Required(path, "one source must be set")
}

func httpSource(h *cdiv1.DataVolumeSourceHTTP, path *field.Path) (Source, *field.Error) {
	if h.URL == "" {
		return Source{}, field.Required(path.Child("url"), "")
	}
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Source{}, field.Invalid(path.Child("url"), redact(h.URL), "must be an http or https URL")
	}
	if u.User != nil {
		return Source{}, field.Invalid(path.Child("url"), redact(h.URL), "credentials belong in secretRef, not in the URL")
	}
	if len(h.SecretExtraHeaders) > 0 {
		return Source{}, field.Invalid(path.Child("secretExtraHeaders"), h.SecretExtraHeaders, "not supported by virtkit yet; use extraHeaders")
	}
	for i, hdr := range h.ExtraHeaders {
		if name, _, ok := strings.Cut(hdr, ":"); !ok || strings.TrimSpace(name) == "" {
			return Source{}, field.Invalid(path.Child("extraHeaders").Index(i), hdr, `must be "Name: value"`)
		}
	}
	if h.Checksum != "" {
		alg, sum, ok := strings.Cut(h.Checksum, ":")
		if !ok || sum == "" || !isHex(sum) {
			return Source{}, field.Invalid(path.Child("checksum"), h.Checksum, `must be "algorithm:hex"`)
		}
		known := false
		for _, a := range checksumAlgorithms {
			known = known || alg == a
		}
		if !known {
			return Source{}, field.NotSupported(path.Child("checksum"), alg, checksumAlgorithms)
		}
	}
	return Source{Kind: contract.SourceHTTP, HTTP: h}, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// redact drops the user information of a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// registrySource is a registry source: a containerDisk image, which the
// importer pulls (pullMethod pod, CDI's default) or the node pulls for the
// importer pod as an image volume (pullMethod node).
func registrySource(r *cdiv1.DataVolumeSourceRegistry, path *field.Path) (Source, *field.Error) {
	node := r.PullMethod != nil && *r.PullMethod == cdiv1.RegistryPullNode
	nodeOnly := "not with pullMethod node: the node pulls the image with the namespace's image pull secrets and its own trust; leave pullMethod out (pod) for the importer to pull it"
	switch {
	case r.PullMethod != nil && *r.PullMethod != cdiv1.RegistryPullPod && *r.PullMethod != cdiv1.RegistryPullNode:
		return Source{}, field.NotSupported(path.Child("pullMethod"), *r.PullMethod, []cdiv1.RegistryPullMethod{cdiv1.RegistryPullPod, cdiv1.RegistryPullNode})
	case r.ImageStream != nil:
		return Source{}, field.Invalid(path.Child("imageStream"), *r.ImageStream, "image streams are not supported by virtkit")
	case r.URL == nil || *r.URL == "":
		return Source{}, field.Required(path.Child("url"), contract.RegistryScheme+"REGISTRY/IMAGE:TAG")
	case node && ptr.Deref(r.SecretRef, "") != "":
		return Source{}, field.Invalid(path.Child("secretRef"), *r.SecretRef, nodeOnly)
	case node && ptr.Deref(r.CertConfigMap, "") != "":
		return Source{}, field.Invalid(path.Child("certConfigMap"), *r.CertConfigMap, nodeOnly)
	case node && r.Platform != nil:
		return Source{}, field.Invalid(path.Child("platform"), "", nodeOnly)
	}
	ref, ok := strings.CutPrefix(*r.URL, contract.RegistryScheme)
	if !ok || ref == "" || strings.ContainsAny(ref, " \t\n") {
		return Source{}, field.Invalid(path.Child("url"), *r.URL, "must be docker://REGISTRY/IMAGE[:TAG|@DIGEST]")
	}
	if node {
		return Source{Kind: contract.SourceFile, Image: ref}, nil
	}
	pull := &RegistryPull{SecretRef: ptr.Deref(r.SecretRef, ""), CertConfigMap: ptr.Deref(r.CertConfigMap, "")}
	if r.Platform != nil {
		pull.Architecture = r.Platform.Architecture
	}
	return Source{Kind: contract.SourceRegistry, Image: ref, Registry: pull}, nil
}

// claimSource is a pvc source: another claim of the DataVolume's
// namespace, whose disk the importer copies.
func claimSource(dv *cdiv1.DataVolume, p *cdiv1.DataVolumeSourcePVC, path *field.Path) (Source, *field.Error) {
	c := *p
	if c.Namespace == "" {
		c.Namespace = dv.Namespace
	}
	switch {
	case c.Name == "":
		return Source{}, field.Required(path.Child("name"), "")
	case c.Name == dv.Name && c.Namespace == dv.Namespace:
		return Source{}, field.Invalid(path.Child("name"), c.Name, "a DataVolume cannot clone its own claim")
	}
	return Source{Kind: contract.SourceFile, Claim: &c}, nil
}

// snapshotSource is a VolumeSnapshot source of a DataVolume of namespace
// ns, restored into its claim by the storage (one of another namespace is
// restored there and its volume handed over).
func snapshotSource(ns string, p *cdiv1.DataVolumeSourceSnapshot, path *field.Path) (Source, *field.Error) {
	snap := *p
	if snap.Namespace == "" {
		snap.Namespace = ns
	}
	if snap.Name == "" {
		return Source{}, field.Required(path.Child("name"), "")
	}
	return Source{Kind: contract.SourceFile, Snapshot: &snap}, nil
}

// sourceRef is a DataSource of the DataVolume's namespace, resolved by the
// controller into the claim it names.
func sourceRef(dv *cdiv1.DataVolume, ref *cdiv1.DataVolumeSourceRef, path *field.Path) (Source, *field.Error) {
	r := *ref
	ns := dv.Namespace
	if r.Namespace != nil && *r.Namespace != "" {
		ns = *r.Namespace
	}
	r.Namespace = &ns
	switch {
	case dv.Spec.Source != nil:
		return Source{}, field.Invalid(path, r.Name, "spec.source and spec.sourceRef are exclusive")
	case r.Kind != cdiv1.DataVolumeDataSource:
		return Source{}, field.NotSupported(path.Child("kind"), r.Kind, []string{cdiv1.DataVolumeDataSource})
	case r.Name == "":
		return Source{}, field.Required(path.Child("name"), "")
	}
	return Source{Kind: contract.SourceFile, Ref: &r}, nil
}
