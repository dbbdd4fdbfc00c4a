package datavolume

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Source is a DataVolume's source as the importer takes it.
type Source struct {
	// Kind is contract.SourceHTTP or contract.SourceBlank.
	Kind string
	// HTTP is an http source's spec.
	HTTP *cdiv1.DataVolumeSourceHTTP
}

// checksumAlgorithms are those CDI's importer verifies.
var checksumAlgorithms = []string{"md5", "sha1", "sha256", "sha512"}

// SourceOf returns the source of dv's data, or an error naming the field
// that cannot work.
func SourceOf(dv *cdiv1.DataVolume) (Source, *field.Error) {
	spec := field.NewPath("spec")
	if dv.Spec.SourceRef != nil {
		return Source{}, field.Invalid(spec.Child("sourceRef"), dv.Spec.SourceRef.Name, "DataSource references are not supported by virtkit yet")
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
	}
	for _, s := range []struct {
		name string
		set  bool
	}{
		{"registry", src.Registry != nil}, {"pvc", src.PVC != nil}, {"upload", src.Upload != nil}, {"s3", src.S3 != nil},
		{"gcs", src.GCS != nil}, {"imageio", src.Imageio != nil}, {"vddk", src.VDDK != nil}, {"snapshot", src.Snapshot != nil},
	} {
		if s.set {
			return Source{}, field.Invalid(path.Child(s.name), "", "this source is not supported by virtkit yet (http and blank are)")
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
