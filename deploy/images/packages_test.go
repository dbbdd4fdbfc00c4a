package images_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os/exec"
	"sort"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/deploy/images"
)

// testPackages is the contract every Packages meets, for an archive that
// has the package root, which depends on dep (directly or not).
func testPackages(t *testing.T, p images.Packages, root, dep string) {
	ctx := context.Background()
	got, err := p.Resolve(ctx, []string{root, root})
	assert.NilError(t, err)
	names := make([]string, len(got))
	for i, pkg := range got {
		names[i] = pkg.Name
		assert.Assert(t, pkg.Version != "" && pkg.Arch != "" && len(pkg.SHA256) == 64, "%+v", pkg)
	}
	assert.Assert(t, sort.StringsAreSorted(names), "%v", names)
	seen := map[string]bool{}
	for _, n := range names {
		assert.Assert(t, !seen[n], "%s listed twice: %v", n, names)
		seen[n] = true
	}
	assert.Assert(t, seen[root] && seen[dep], "%v has %s and its dependency %s", names, root, dep)

	for _, pkg := range got {
		if pkg.Name != root {
			continue
		}
		rc, err := p.Files(ctx, pkg)
		assert.NilError(t, err)
		tr := tar.NewReader(rc)
		n := 0
		for {
			_, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			assert.NilError(t, err)
			n++
		}
		assert.NilError(t, rc.Close())
		assert.Assert(t, n > 1, "%s has files", root)
	}

	_, err = p.Resolve(ctx, []string{"virtkit-no-such-package"})
	assert.Assert(t, err != nil, "an unknown package is an error")
	none, err := p.Resolve(ctx, nil)
	assert.NilError(t, err)
	assert.Equal(t, len(none), 0)
}

func TestFakeArchiveMeetsThePackagesContract(t *testing.T) {
	testPackages(t, archive(), "libx", "libc")
}

func TestAPTMeetsThePackagesContract(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads from the Debian archive")
	}
	for _, c := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s: %v (a Debian host is needed; see hack/deps.sh)", c, err)
		}
	}
	a := &images.APT{Cache: t.TempDir(), Omit: images.DefaultOmit}
	testPackages(t, a, "libgcc-s1", "libc6")

	// Omitted packages are left out.
	got, err := a.Resolve(context.Background(), []string{"libc6"})
	assert.NilError(t, err)
	for _, p := range got {
		for _, o := range images.DefaultOmit {
			assert.Assert(t, p.Name != o, "%s is omitted", o)
		}
	}
}
