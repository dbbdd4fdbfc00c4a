package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The paths of the distribution API. A repository name is the
// specification's: lowercase components separated by slashes.
var (
	nameExpr      = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*`
	reManifest    = regexp.MustCompile(`^/v2/(` + nameExpr + `)/manifests/([^/]+)$`)
	reTags        = regexp.MustCompile(`^/v2/(` + nameExpr + `)/tags/list$`)
	reUploadStart = regexp.MustCompile(`^/v2/(` + nameExpr + `)/blobs/uploads/?$`)
	reUpload      = regexp.MustCompile(`^/v2/(` + nameExpr + `)/blobs/uploads/([^/]+)$`)
	reBlob        = regexp.MustCompile(`^/v2/(` + nameExpr + `)/blobs/([^/]+)$`)
	reTag         = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

// maxManifest bounds a pushed manifest.
const maxManifest = 4 << 20

// handler serves the distribution API over a storage.
type handler struct {
	store   *storage
	uploads *uploads
	log     logr.Logger
}

// Handler returns the registry's HTTP handler over the OCI image layout in
// dir (made if missing), for an integrator who serves it on a server of
// its own; Start is the usual way. Uploads left unfinished by an earlier
// handler on dir are discarded. Requests that fail on the registry's side
// are logged to log.
func Handler(dir string, log logr.Logger) (http.Handler, error) {
	h, err := newHandler(dir, log)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func newHandler(dir string, log logr.Logger) (*handler, error) {
	s, err := openStorage(dir)
	if err != nil {
		return nil, err
	}
	u, err := newUploads(filepath.Join(dir, "uploads"))
	if err != nil {
		return nil, err
	}
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &handler{store: s, uploads: u, log: log}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	err := h.serve(w, r)
	if err == nil {
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		h.log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
		ae = newAPIError(http.StatusInternalServerError, "UNKNOWN", "%v", err)
	} else {
		h.log.V(1).Info("request refused", "method", r.Method, "path", r.URL.Path, "error", ae.Error())
	}
	ae.write(w)
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) error {
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return errUnsupported("%s %s", r.Method, p)
		}
		return writeJSON(w, r, struct{}{})
	case p == "/v2/_catalog":
		if r.Method != http.MethodGet {
			return errUnsupported("%s %s", r.Method, p)
		}
		page, next := paginate(h.store.repositories(), r.URL.Query())
		if next != "" {
			w.Header().Set("Link", fmt.Sprintf(`</v2/_catalog?n=%d&last=%s>; rel="next"`, len(page), url.QueryEscape(next)))
		}
		return writeJSON(w, r, struct {
			Repositories []string `json:"repositories"`
		}{page})
	}
	if m := reManifest.FindStringSubmatch(p); m != nil {
		return h.manifest(w, r, m[1], m[2])
	}
	if m := reTags.FindStringSubmatch(p); m != nil {
		return h.tagList(w, r, m[1])
	}
	if m := reUploadStart.FindStringSubmatch(p); m != nil {
		return h.startUpload(w, r, m[1])
	}
	if m := reUpload.FindStringSubmatch(p); m != nil {
		return h.upload(w, r, m[1], m[2])
	}
	if m := reBlob.FindStringSubmatch(p); m != nil {
		return h.blob(w, r, m[2])
	}
	return errNameInvalid(p)
}

// isDigest tells a digest reference from a tag.
func isDigest(ref string) bool { return strings.Contains(ref, ":") }

func (h *handler) manifest(w http.ResponseWriter, r *http.Request, repo, ref string) error {
	if isDigest(ref) {
		if _, err := v1.NewHash(ref); err != nil {
			return errDigestInvalid("%q: %v", ref, err)
		}
	} else if !reTag.MatchString(ref) {
		return newAPIError(http.StatusBadRequest, "TAG_INVALID", "%q is neither a tag nor a sha256 digest", ref)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		d, err := h.store.resolve(repo, ref)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(h.store.blobPath(d.Digest))
		if errors.Is(err, os.ErrNotExist) {
			return errManifestUnknown(repo, ref)
		} else if err != nil {
			return err
		}
		w.Header().Set("Content-Type", string(d.MediaType))
		w.Header().Set("Docker-Content-Digest", d.Digest.String())
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
		return nil
	case http.MethodPut:
		return h.putManifest(w, r, repo, ref)
	case http.MethodDelete:
		if err := h.store.deleteManifest(repo, ref); err != nil {
			return err
		}
		h.log.Info("manifest deleted", "repository", repo, "reference", ref)
		w.WriteHeader(http.StatusAccepted)
		return nil
	default:
		return errUnsupported("%s of a manifest", r.Method)
	}
}

// manifestFields are what the registry checks of a pushed manifest.
type manifestFields struct {
	MediaType types.MediaType `json:"mediaType"`
	Config    *v1.Descriptor  `json:"config"`
	Layers    []v1.Descriptor `json:"layers"`
	Manifests []v1.Descriptor `json:"manifests"`
}

// putManifest stores a manifest whose blobs (an image's config and layers,
// an index's manifests) are all in the registry.
func (h *handler) putManifest(w http.ResponseWriter, r *http.Request, repo, ref string) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxManifest+1))
	if err != nil {
		return newAPIError(http.StatusBadRequest, "MANIFEST_INVALID", "reading it: %v", err)
	}
	if len(b) > maxManifest {
		return newAPIError(http.StatusRequestEntityTooLarge, "SIZE_INVALID", "a manifest may have %d bytes at most", maxManifest)
	}
	d, size, _ := v1.SHA256(bytes.NewReader(b))
	if isDigest(ref) && ref != d.String() {
		return errDigestInvalid("the manifest has digest %s, not %s", d, ref)
	}
	var m manifestFields
	if err := json.Unmarshal(b, &m); err != nil {
		return newAPIError(http.StatusBadRequest, "MANIFEST_INVALID", "not JSON: %v", err)
	}
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	mediaType := types.MediaType(strings.TrimSpace(mt))
	switch {
	case mediaType == "" && m.MediaType != "":
		mediaType = m.MediaType
	case mediaType == "" && m.Manifests != nil:
		mediaType = types.OCIImageIndex
	case mediaType == "":
		mediaType = types.OCIManifestSchema1
	case m.MediaType != "" && m.MediaType != mediaType:
		return newAPIError(http.StatusBadRequest, "MANIFEST_INVALID", "Content-Type %s but mediaType %s", mediaType, m.MediaType)
	}
	var refs []v1.Descriptor
	switch {
	case mediaType.IsIndex():
		refs = m.Manifests
	case mediaType.IsImage():
		if m.Config == nil {
			return newAPIError(http.StatusBadRequest, "MANIFEST_INVALID", "an image manifest without config")
		}
		refs = append([]v1.Descriptor{*m.Config}, m.Layers...)
	default:
		return newAPIError(http.StatusBadRequest, "MANIFEST_INVALID", "media type %q is not an image manifest or index", mediaType)
	}
	for _, x := range refs {
		if len(x.URLs) == 0 && !h.store.hasBlob(x.Digest) {
			return newAPIError(http.StatusBadRequest, "MANIFEST_BLOB_UNKNOWN", "%s is not in the registry: push it first", x.Digest)
		}
	}
	if err := h.store.writeBlob(d, b); err != nil {
		return err
	}
	tag := ""
	if !isDigest(ref) {
		tag = ref
	}
	if err := h.store.putManifest(repo, tag, v1.Descriptor{MediaType: mediaType, Size: size, Digest: d}); err != nil {
		return err
	}
	h.log.Info("manifest pushed", "repository", repo, "reference", ref, "digest", d.String())
	w.Header().Set("Location", "/v2/"+repo+"/manifests/"+d.String())
	w.Header().Set("Docker-Content-Digest", d.String())
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (h *handler) tagList(w http.ResponseWriter, r *http.Request, repo string) error {
	if r.Method != http.MethodGet {
		return errUnsupported("%s of a tag list", r.Method)
	}
	tags, ok := h.store.tags(repo)
	if !ok {
		return errNameUnknown(repo)
	}
	page, next := paginate(tags, r.URL.Query())
	if next != "" {
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=%d&last=%s>; rel="next"`, repo, len(page), url.QueryEscape(next)))
	}
	return writeJSON(w, r, struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{repo, page})
}

// paginate applies the n and last parameters to a sorted list; next is
// the last item of the page when more follow.
func paginate(list []string, q url.Values) (page []string, next string) {
	if last := q.Get("last"); last != "" {
		i := 0
		for i < len(list) && list[i] <= last {
			i++
		}
		list = list[i:]
	}
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n <= 0 || n >= len(list) {
		return list, ""
	}
	return list[:n], list[n-1]
}

func (h *handler) blob(w http.ResponseWriter, r *http.Request, digest string) error {
	d, err := v1.NewHash(digest)
	if err != nil {
		return errDigestInvalid("%q: %v", digest, err)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		f, err := os.Open(h.store.blobPath(d))
		if errors.Is(err, os.ErrNotExist) {
			return errBlobUnknown(digest)
		} else if err != nil {
			return err
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Docker-Content-Digest", d.String())
		w.Header().Set("Etag", `"`+d.String()+`"`)
		http.ServeContent(w, r, "", time.Time{}, f) // ranges, HEAD, Content-Length
		return nil
	case http.MethodDelete:
		return errUnsupported("blobs are not deleted: they stay until the registry's folder is removed")
	default:
		return errUnsupported("%s of a blob", r.Method)
	}
}

// startUpload begins a blob upload: a monolithic one (?digest=, the body
// is the blob), a mount of a blob the registry has (?mount=), or one the
// client continues with PATCH and PUT.
func (h *handler) startUpload(w http.ResponseWriter, r *http.Request, repo string) error {
	if r.Method != http.MethodPost {
		return errUnsupported("%s of blob uploads", r.Method)
	}
	q := r.URL.Query()
	if mount := q.Get("mount"); mount != "" {
		// Blobs are shared by all repositories: a mount is a lookup.
		if d, err := v1.NewHash(mount); err == nil && h.store.hasBlob(d) {
			blobCreated(w, repo, d)
			return nil
		}
	}
	id, up, err := h.uploads.start()
	if err != nil {
		return err
	}
	if digest := q.Get("digest"); digest != "" {
		defer h.uploads.end(id)
		d, err := v1.NewHash(digest)
		if err != nil {
			return errDigestInvalid("%q: %v", digest, err)
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		if err := up.write(r.Body); err != nil {
			return newAPIError(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the blob: %v", err)
		}
		if err := up.commit(h.store, d); err != nil {
			return err
		}
		blobCreated(w, repo, d)
		return nil
	}
	uploadStatus(w, repo, id, 0, http.StatusAccepted)
	return nil
}

// upload continues (PATCH), completes (PUT), reports (GET) or cancels
// (DELETE) the upload id.
func (h *handler) upload(w http.ResponseWriter, r *http.Request, repo, id string) error {
	up, ok := h.uploads.get(id)
	if !ok {
		return errUploadUnknown(id)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		uploadStatus(w, repo, id, up.size, http.StatusNoContent)
		return nil
	case http.MethodPatch:
		if cr := r.Header.Get("Content-Range"); cr != "" {
			var start, end int64
			if _, err := fmt.Sscanf(cr, "%d-%d", &start, &end); err != nil || start != up.size {
				return newAPIError(http.StatusRequestedRangeNotSatisfiable, "BLOB_UPLOAD_INVALID",
					"Content-Range %q does not continue the upload, which has %d bytes", cr, up.size)
			}
		}
		if err := up.write(r.Body); err != nil {
			h.uploads.end(id)
			return newAPIError(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the chunk: %v (the upload is cancelled)", err)
		}
		uploadStatus(w, repo, id, up.size, http.StatusAccepted)
		return nil
	case http.MethodPut:
		defer h.uploads.end(id)
		d, err := v1.NewHash(r.URL.Query().Get("digest"))
		if err != nil {
			return errDigestInvalid("completing an upload needs ?digest=: %v", err)
		}
		if err := up.write(r.Body); err != nil {
			return newAPIError(http.StatusBadRequest, "BLOB_UPLOAD_INVALID", "reading the last chunk: %v", err)
		}
		if err := up.commit(h.store, d); err != nil {
			return err
		}
		blobCreated(w, repo, d)
		return nil
	case http.MethodDelete:
		h.uploads.end(id)
		w.WriteHeader(http.StatusNoContent)
		return nil
	default:
		return errUnsupported("%s of an upload", r.Method)
	}
}

func uploadStatus(w http.ResponseWriter, repo, id string, size int64, status int) {
	end := size - 1
	if end < 0 {
		end = 0
	}
	w.Header().Set("Location", "/v2/"+repo+"/blobs/uploads/"+id)
	w.Header().Set("Range", fmt.Sprintf("0-%d", end))
	w.Header().Set("Docker-Upload-UUID", id)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
}

func blobCreated(w http.ResponseWriter, repo string, d v1.Hash) {
	w.Header().Set("Location", "/v2/"+repo+"/blobs/"+d.String())
	w.Header().Set("Docker-Content-Digest", d.String())
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusCreated)
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
	return nil
}
