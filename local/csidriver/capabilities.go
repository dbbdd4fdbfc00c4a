package csidriver

import (
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// metadataPrefix starts the parameters Kubernetes' sidecars add to every
// call (claim, snapshot and volume names); other parameters are refused.
const metadataPrefix = "csi.storage.k8s.io/"

// checkParameters refuses parameters the driver does not take, naming the
// first.
func checkParameters(field string, params map[string]string) error {
	for k := range params {
		if !strings.HasPrefix(k, metadataPrefix) {
			return fmt.Errorf("%s[%s]: the driver takes no parameters", field, k)
		}
	}
	return nil
}

// accessKind checks a request's volume capabilities: all Block or all
// Mount, with an access mode the driver knows, no file system type but the
// root's and no mount flags (a folder is bound as it is). It reports
// whether they ask for a Block volume.
func accessKind(field string, caps []*csi.VolumeCapability) (block bool, err error) {
	if len(caps) == 0 {
		return false, fmt.Errorf("%s: at least one capability is required", field)
	}
	for i, c := range caps {
		f := fmt.Sprintf("%s[%d]", field, i)
		b, err := capabilityKind(f, c)
		if err != nil {
			return false, err
		}
		if i > 0 && b != block {
			return false, fmt.Errorf("%s: block and mount access cannot be mixed", f)
		}
		block = b
	}
	return block, nil
}

// capabilityKind checks one capability and reports whether it is Block.
func capabilityKind(field string, c *csi.VolumeCapability) (block bool, err error) {
	if c == nil {
		return false, fmt.Errorf("%s: required", field)
	}
	if c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
		return false, fmt.Errorf("%s.access_mode: required", field)
	}
	if _, ok := csi.VolumeCapability_AccessMode_Mode_name[int32(c.GetAccessMode().GetMode())]; !ok {
		return false, fmt.Errorf("%s.access_mode: unknown mode %d", field, c.GetAccessMode().GetMode())
	}
	switch {
	case c.GetBlock() != nil:
		return true, nil
	case c.GetMount() != nil:
		if m := c.GetMount(); len(m.GetMountFlags()) > 0 {
			return false, fmt.Errorf("%s.mount.mount_flags: a folder takes no mount flags (got %q)", field, m.GetMountFlags())
		}
		return false, nil
	}
	return false, fmt.Errorf("%s.access_type: block or mount is required", field)
}

// readOnlyMode reports whether an access mode allows reading only.
func readOnlyMode(c *csi.VolumeCapability) bool {
	switch c.GetAccessMode().GetMode() {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		return true
	}
	return false
}
