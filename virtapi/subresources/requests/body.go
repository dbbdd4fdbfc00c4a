package requests

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// MaxBody bounds a request body; the largest, AddVolumeOptions, is far smaller.
const MaxBody = 1 << 20

// Decode reads the JSON (or YAML) body of r into opts, as KubeVirt's
// virt-api does: an empty body leaves opts as they are. w is the response
// the body bound reports to; what names the options type in errors
// ("v1.StartOptions") and example shows a valid body.
func Decode(w http.ResponseWriter, r *http.Request, opts any, what, example string) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	err := yaml.NewYAMLOrJSONDecoder(body, 1024).Decode(opts)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	// KubeVirt's wording first, then what to send.
	return badRequest("Can not unmarshal Request body to struct, error: %v; send a JSON %s, e.g. %s", err, what, example)
}

// DryRun checks a dryRun list (only "All" is valid, as in the Kubernetes
// API) and tells whether the call is a dry run.
func DryRun(values []string) (bool, error) {
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) == 1 && values[0] == metav1.DryRunAll:
		return true, nil
	}
	return false, badRequest("dryRun %v is not supported: the only valid value is [%q]", values, metav1.DryRunAll)
}

// DecodeDry is [Decode] then [DryRun] for option types with a DryRun
// field; dry points at it.
func DecodeDry(w http.ResponseWriter, r *http.Request, opts any, dry *[]string, what, example string) (bool, error) {
	if err := Decode(w, r, opts, what, example); err != nil {
		return false, err
	}
	return DryRun(*dry)
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}
