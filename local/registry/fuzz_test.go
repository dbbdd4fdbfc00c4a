package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
)

// FuzzPushAndPull plays a client that pushes what it likes: a blob in
// chunks under any repository name and Content-Range, then a manifest of
// any bytes and Content-Type under any reference. Whatever it sends, the
// registry answers with a status below 500 (a refusal names the client's
// mistake, never the registry's failure); a blob it accepts reads back as
// sent; a manifest it accepts reads back byte for byte under its reference
// and its digest. Run with
//
//	go test ./local/registry/ -run '^$' -fuzz FuzzPushAndPull -fuzztime 60s
func FuzzPushAndPull(f *testing.F) {
	blob := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	d := digestOf(blob)
	image := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`, d, len(blob), d, len(blob))
	index := fmt.Sprintf(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":%q,"size":1}]}`, d)
	const oci = "application/vnd.oci.image.manifest.v1+json"
	f.Add("library/guest", "v1", oci, []byte(image), blob, "")
	f.Add("library/guest", "v1", "", []byte(image), blob, fmt.Sprintf("0-%d", len(blob)-1))
	f.Add("guest", d, oci, []byte(image), blob, "5-9")
	f.Add("guest", "latest", "application/vnd.oci.image.index.v1+json", []byte(index), blob, "")
	f.Add("Guest/../x", "v1", oci, []byte(image), blob, "")
	f.Add("guest", "sha256:zz", "text/plain; charset=utf-8", []byte(`{"mediaType":"x"}`), []byte{}, "0-0")
	f.Add("guest", "v1", oci, []byte(`{"config":null}`), []byte{}, "-1-2")
	f.Fuzz(func(t *testing.T, repo, ref, contentType string, manifest, chunk []byte, contentRange string) {
		h, err := newHandler(t.TempDir(), logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		defer h.uploads.close()
		call := func(method, target string, header http.Header, body []byte) *httptest.ResponseRecorder {
			r, err := http.NewRequest(method, "http://registry"+target, bytes.NewReader(body))
			if err != nil {
				return nil
			}
			for k, v := range header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code >= 500 {
				t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
			}
			return w
		}

		// A blob, in one chunk.
		start := call(http.MethodPost, "/v2/"+repo+"/blobs/uploads/", nil, nil)
		pushed := false
		if start != nil && start.Code == http.StatusAccepted {
			loc := start.Header().Get("Location")
			hdr := http.Header{}
			if contentRange != "" {
				hdr.Set("Content-Range", contentRange)
			}
			patch := call(http.MethodPatch, loc, hdr, chunk)
			if patch != nil && patch.Code == http.StatusAccepted {
				put := call(http.MethodPut, loc+"?digest="+digestOf(chunk), nil, nil)
				if put == nil || put.Code != http.StatusCreated {
					t.Fatalf("completing an upload with its content's digest: %v", put)
				}
				pushed = true
			} else {
				call(http.MethodDelete, loc, nil, nil)
			}
		}
		if pushed {
			got := call(http.MethodGet, "/v2/"+repo+"/blobs/"+digestOf(chunk), nil, nil)
			if got == nil || got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), chunk) {
				t.Fatalf("the pushed blob does not read back: %v", got)
			}
		}

		// A manifest.
		hdr := http.Header{}
		if contentType != "" {
			hdr.Set("Content-Type", contentType)
		}
		put := call(http.MethodPut, "/v2/"+repo+"/manifests/"+ref, hdr, manifest)
		if put == nil || put.Code != http.StatusCreated {
			return
		}
		md := digestOf(manifest)
		if got := put.Header().Get("Docker-Content-Digest"); got != md {
			t.Errorf("pushed manifest digest %q, want %q", got, md)
		}
		for _, r := range []string{ref, md} {
			got := call(http.MethodGet, "/v2/"+repo+"/manifests/"+r, nil, nil)
			if got == nil || got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), manifest) {
				t.Fatalf("the pushed manifest does not read back under %q: %v", r, got)
			}
			if got.Header().Get("Docker-Content-Digest") != md {
				t.Errorf("GET %q: digest %q, want %q", r, got.Header().Get("Docker-Content-Digest"), md)
			}
		}
	})
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
