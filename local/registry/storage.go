package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refNameAnnotation names a manifest of an OCI image layout's index.json
// (the image-spec's org.opencontainers.image.ref.name).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// storage is the registry's content on disk, an OCI image layout:
// blobs/sha256/HEX for every blob and manifest, oci-layout, and index.json,
// which lists each manifest the registry serves under the ref name
// REPOSITORY:TAG, or REPOSITORY@DIGEST for one that has no tag. Every file
// is written to a temporary name and renamed, so a crash leaves the
// previous content. The index is kept in memory and written through.
type storage struct {
	dir string

	mu    sync.Mutex // index and index.json
	index v1.IndexManifest
}

const layoutFile = `{"imageLayoutVersion":"1.0.0"}`

// openStorage opens the layout in dir, making it if missing.
func openStorage(dir string) (*storage, error) {
	s := &storage{dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); errors.Is(err, os.ErrNotExist) {
		if err := writeFileAtomic(filepath.Join(dir, "oci-layout"), []byte(layoutFile)); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	b, err := os.ReadFile(s.indexPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.index = v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
		if err := s.writeIndex(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("registry: %w", err)
	default:
		if err := json.Unmarshal(b, &s.index); err != nil {
			return nil, fmt.Errorf("registry: %s: %w", s.indexPath(), err)
		}
	}
	return s, nil
}

func (s *storage) indexPath() string { return filepath.Join(s.dir, "index.json") }

// blobPath is where the blob of digest h is.
func (s *storage) blobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

// hasBlob reports whether the blob of digest h is stored.
func (s *storage) hasBlob(h v1.Hash) bool {
	st, err := os.Stat(s.blobPath(h))
	return err == nil && st.Mode().IsRegular()
}

// commitBlob moves the complete, verified file tmp to the blob of digest h
// (a blob that exists already is left as it is).
func (s *storage) commitBlob(tmp string, h v1.Hash) error {
	if s.hasBlob(h) {
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, s.blobPath(h)); err != nil {
		return fmt.Errorf("registry: blob %s: %w", h, err)
	}
	return syncDir(filepath.Dir(s.blobPath(h)))
}

// writeBlob stores b as the blob of digest h.
func (s *storage) writeBlob(h v1.Hash, b []byte) error {
	if s.hasBlob(h) {
		return nil
	}
	if err := writeFileAtomic(s.blobPath(h), b); err != nil {
		return fmt.Errorf("registry: blob %s: %w", h, err)
	}
	return nil
}

// refName is the index.json ref name of repo's tag or, without tag, of
// repo's manifest of digest d.
func refName(repo, tag string, d v1.Hash) string {
	if tag != "" {
		return repo + ":" + tag
	}
	return repo + "@" + d.String()
}

// splitRefName is refName's inverse; ok is false for a ref name of another
// form (the layout may have been written by another tool).
func splitRefName(ref string) (repo, tag, digest string, ok bool) {
	if i := strings.Index(ref, "@"); i > 0 {
		return ref[:i], "", ref[i+1:], true
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") && i > 0 {
		return ref[:i], ref[i+1:], "", true
	}
	return "", "", "", false
}

// resolve finds repo's manifest of reference ref, a tag or a digest.
func (s *storage) resolve(repo, ref string) (v1.Descriptor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	known := false
	for _, d := range s.index.Manifests {
		r, tag, digest, ok := splitRefName(d.Annotations[refNameAnnotation])
		if !ok || r != repo {
			continue
		}
		known = true
		if tag == ref || digest == ref || (tag != "" && d.Digest.String() == ref) {
			return d, nil
		}
	}
	if !known {
		return v1.Descriptor{}, errNameUnknown(repo)
	}
	return v1.Descriptor{}, errManifestUnknown(repo, ref)
}

// putManifest makes desc (a stored manifest) repo's manifest under tag,
// or, with no tag, one of repo's manifests by digest. A manifest the tag
// named before stays reachable by its digest.
func (s *storage) putManifest(repo, tag string, desc v1.Descriptor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := refName(repo, tag, desc.Digest)
	desc.Annotations = map[string]string{refNameAnnotation: name}
	var out []v1.Descriptor
	var replaced *v1.Descriptor
	for _, d := range s.index.Manifests {
		switch d.Annotations[refNameAnnotation] {
		case name:
			replaced = &d
		case refName(repo, "", desc.Digest):
			if tag != "" {
				continue // the tag now keeps it reachable
			}
			out = append(out, d)
		default:
			out = append(out, d)
		}
	}
	out = append(out, desc)
	if replaced != nil && replaced.Digest != desc.Digest && !s.reachable(out, repo, replaced.Digest) {
		kept := *replaced
		kept.Annotations = map[string]string{refNameAnnotation: refName(repo, "", kept.Digest)}
		out = append(out, kept)
	}
	prev := s.index.Manifests
	s.index.Manifests = out
	if err := s.writeIndex(); err != nil {
		s.index.Manifests = prev
		return err
	}
	return nil
}

// reachable reports whether a manifest of repo in list has digest d.
func (s *storage) reachable(list []v1.Descriptor, repo string, d v1.Hash) bool {
	for _, x := range list {
		if r, _, _, ok := splitRefName(x.Annotations[refNameAnnotation]); ok && r == repo && x.Digest == d {
			return true
		}
	}
	return false
}

// deleteManifest removes repo's tag ref (its manifest stays reachable by
// digest), or, for a digest, the manifest and every tag of repo that names
// it. The blobs stay.
func (s *storage) deleteManifest(repo, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []v1.Descriptor{}
	var untagged *v1.Descriptor
	known, found := false, false
	for _, d := range s.index.Manifests {
		r, tag, _, ok := splitRefName(d.Annotations[refNameAnnotation])
		if ok && r == repo {
			known = true
			if tag == ref || (isDigest(ref) && d.Digest.String() == ref) {
				found = true
				if tag == ref {
					untagged = &d
				}
				continue
			}
		}
		out = append(out, d)
	}
	switch {
	case !known:
		return errNameUnknown(repo)
	case !found:
		return errManifestUnknown(repo, ref)
	}
	if untagged != nil && !s.reachable(out, repo, untagged.Digest) {
		kept := *untagged
		kept.Annotations = map[string]string{refNameAnnotation: refName(repo, "", kept.Digest)}
		out = append(out, kept)
	}
	prev := s.index.Manifests
	s.index.Manifests = out
	if err := s.writeIndex(); err != nil {
		s.index.Manifests = prev
		return err
	}
	return nil
}

// tags lists repo's tags, sorted; ok is false when repo has no manifest.
func (s *storage) tags(repo string) (tags []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tags = []string{}
	for _, d := range s.index.Manifests {
		if r, tag, _, valid := splitRefName(d.Annotations[refNameAnnotation]); valid && r == repo {
			ok = true
			if tag != "" {
				tags = append(tags, tag)
			}
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags), ok
}

// repositories lists the repositories that have a manifest, sorted.
func (s *storage) repositories() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	repos := []string{}
	for _, d := range s.index.Manifests {
		if r, _, _, ok := splitRefName(d.Annotations[refNameAnnotation]); ok {
			repos = append(repos, r)
		}
	}
	slices.Sort(repos)
	return slices.Compact(repos)
}

// writeIndex writes index.json from s.index; s.mu is held.
func (s *storage) writeIndex() error {
	b, err := json.MarshalIndent(s.index, "", "  ")
	if err != nil {
		return fmt.Errorf("registry: index.json: %w", err)
	}
	if err := writeFileAtomic(s.indexPath(), b); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with b: a temporary file in the same
// folder, synced, renamed over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
