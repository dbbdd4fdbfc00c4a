package cdiresource

import (
	"sort"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
)

// DefaultName is the name of the CDI resource the controller makes when
// there is none, as in CDI's released manifests.
const DefaultName = "cdi"

// AnnConfigAuthority on a CDI resource says its spec.config is the
// CDIConfig's spec (CDI's annotation).
const AnnConfigAuthority = "cdi.kubevirt.io/configAuthority"

// Active picks the CDI resource in force among cdis: the oldest (by
// creation, then name) not in phase Error, else the oldest of all; the
// others are returned as extra. It returns nil for none.
func Active(cdis []cdiv1.CDI) (active *cdiv1.CDI, extra []*cdiv1.CDI) {
	if len(cdis) == 0 {
		return nil, nil
	}
	all := make([]*cdiv1.CDI, len(cdis))
	for i := range cdis {
		all[i] = &cdis[i]
	}
	sort.SliceStable(all, func(i, j int) bool {
		ti, tj := all[i].CreationTimestamp, all[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return all[i].Name < all[j].Name
	})
	pick := 0
	for i, c := range all {
		if c.Status.Phase != sdkapi.PhaseError {
			pick = i
			break
		}
	}
	active = all[pick]
	extra = append(append(extra, all[:pick]...), all[pick+1:]...)
	return active, extra
}

// ConfigSpec is the CDIConfig spec the active resource c sets: its
// spec.config, or an empty spec; ok is false while c has no configuration
// authority.
func ConfigSpec(c *cdiv1.CDI) (spec cdiv1.CDIConfigSpec, ok bool) {
	if _, ok := c.Annotations[AnnConfigAuthority]; !ok {
		return cdiv1.CDIConfigSpec{}, false
	}
	if c.Spec.Config == nil {
		return cdiv1.CDIConfigSpec{}, true
	}
	return *c.Spec.Config.DeepCopy(), true
}
