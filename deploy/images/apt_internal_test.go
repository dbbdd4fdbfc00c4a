package images

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestParseURILine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Package
		ok   bool
		err  string
	}{
		{
			line: "'http://deb.debian.org/debian/pool/main/q/qemu/qemu-system-x86_7.2%2bdfsg-7_amd64.deb' qemu-system-x86_1%3a7.2+dfsg-7_amd64.deb 9281168 SHA256:faf1",
			want: Package{Name: "qemu-system-x86", Version: "1:7.2+dfsg-7", Arch: "amd64", SHA256: "faf1"}, ok: true,
		},
		{line: "Reading package lists...", ok: false},
		{line: "'u' libc6_2.36_amd64.deb big SHA256:ab", err: "want URI, file, size and SHA256"},
		{line: "'u' libc6.deb 1 SHA256:ab", err: "unexpected file name"},
	} {
		got, ok, err := parseURILine(tc.line)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, ok, tc.ok, tc.line)
		assert.DeepEqual(t, got, tc.want)
	}
}

func TestAPTCachesUnderTheArchivesFileName(t *testing.T) {
	a := &APT{Cache: "/c"}
	assert.Equal(t, a.file(Package{Name: "qemu-system-x86", Version: "1:7.2", Arch: "amd64"}), "/c/qemu-system-x86_1%3a7.2_amd64.deb")
}
