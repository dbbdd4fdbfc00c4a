package cdiconfig

import (
	"net/url"
	"slices"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// InsecureRegistries are the registries a CDIConfig (nil: none) lists in
// spec.insecureRegistries: an importer pulling from one skips the TLS
// certificate check and may use plain HTTP.
func InsecureRegistries(cfg *cdiv1.CDIConfig) []string {
	if cfg == nil {
		return nil
	}
	return slices.Clone(cfg.Spec.InsecureRegistries)
}

// IsInsecureRegistry says whether image (a registry source's reference,
// without docker://) is pulled from one of insecure, as CDI decides: the
// host of its docker:// URL (HOST[:PORT]) is one of them, exactly.
func IsInsecureRegistry(insecure []string, image string) bool {
	u, err := url.Parse(contract.RegistryScheme + image)
	return err == nil && u.Host != "" && slices.Contains(insecure, u.Host)
}
