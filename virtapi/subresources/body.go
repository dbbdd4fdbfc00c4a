package subresources

import (
	"errors"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxBody bounds a request body; the largest, AddVolumeOptions, is far smaller.
const maxBody = 1 << 20

// decodeBody reads the JSON (or YAML) body of req into opts, as KubeVirt's
// virt-api does: an empty body leaves opts as they are. what names the
// options type in errors ("v1.StartOptions").
func decodeBody(req *request, opts any, what, example string) error {
	if req.r.Body == nil || req.r.Body == http.NoBody {
		return nil
	}
	body := http.MaxBytesReader(req.w, req.r.Body, maxBody)
	err := yaml.NewYAMLOrJSONDecoder(body, 1024).Decode(opts)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	// KubeVirt's wording first, then what to send.
	return badRequest("Can not unmarshal Request body to struct, error: %v; send a JSON %s, e.g. %s", err, what, example)
}

// dryRun checks a dryRun list (only "All" is valid, as in the Kubernetes
// API) and returns the write options it stands for.
func dryRun(values []string) (bool, error) {
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) == 1 && values[0] == metav1.DryRunAll:
		return true, nil
	}
	return false, badRequest("dryRun %v is not supported: the only valid value is [%q]", values, metav1.DryRunAll)
}

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

// mustDecode wraps decodeBody and dryRun for option types with a DryRun.
func mustDecode(req *request, opts any, dry *[]string, what, example string) (bool, error) {
	if err := decodeBody(req, opts, what, example); err != nil {
		return false, err
	}
	return dryRun(*dry)
}
