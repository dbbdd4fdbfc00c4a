package subresources

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchOpts, statusPatchOpts and createOpts are the options of a
// write, dry or real.
func patchOpts(dry bool) []client.PatchOption {
	if dry {
		return []client.PatchOption{client.DryRunAll}
	}
	return nil
}

func statusPatchOpts(dry bool) []client.SubResourcePatchOption {
	if dry {
		return []client.SubResourcePatchOption{client.DryRunAll}
	}
	return nil
}

func createOpts(dry bool) []client.CreateOption {
	if dry {
		return []client.CreateOption{client.DryRunAll}
	}
	return nil
}
