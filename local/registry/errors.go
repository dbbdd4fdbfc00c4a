package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// apiError is an error of the distribution API: an HTTP status and one of
// the specification's error codes, sent as its JSON error document.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func (e *apiError) write(w http.ResponseWriter) {
	type detail struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Errors []detail `json:"errors"`
	}{[]detail{{e.code, e.message}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

func newAPIError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func errNameUnknown(repo string) *apiError {
	return newAPIError(http.StatusNotFound, "NAME_UNKNOWN", "repository %q is not in this registry", repo)
}

func errManifestUnknown(repo, ref string) *apiError {
	return newAPIError(http.StatusNotFound, "MANIFEST_UNKNOWN", "repository %q has no manifest %q", repo, ref)
}

func errBlobUnknown(digest string) *apiError {
	return newAPIError(http.StatusNotFound, "BLOB_UNKNOWN", "blob %s is not in this registry", digest)
}

func errUploadUnknown(id string) *apiError {
	return newAPIError(http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "no upload %q (uploads end when the registry stops)", id)
}

func errDigestInvalid(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "DIGEST_INVALID", format, args...)
}

func errNameInvalid(path string) *apiError {
	return newAPIError(http.StatusNotFound, "NAME_INVALID", "%s: not a path of the distribution API (bad repository name, tag or digest?)", path)
}

func errUnsupported(format string, args ...any) *apiError {
	return newAPIError(http.StatusMethodNotAllowed, "UNSUPPORTED", format, args...)
}
