package libvirtd

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestValidate(t *testing.T) {
	long := "/tmp/" + strings.Repeat("x", 100)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error; empty for valid
	}{
		{"valid", Config{Dir: "/tmp/vk"}, ""},
		{"valid with uuid", Config{Dir: "/tmp/vk", HostUUID: "9a1c7e36-5d2b-4f0e-8c3a-6b7d1e2f3a4b"}, ""},
		{"no dir", Config{}, "Config.Dir: required"},
		{"relative dir", Config{Dir: "tmp/vk"}, "must be an absolute path"},
		{"dir too long for a socket", Config{Dir: long}, "too long"},
		{"quote in dir", Config{Dir: `/tmp/a"b`}, "quotes"},
		{"uuid not a uuid", Config{Dir: "/tmp/vk", HostUUID: "host-1"}, "Config.HostUUID"},
		{"uuid with one repeated digit", Config{Dir: "/tmp/vk", HostUUID: "11111111-1111-1111-1111-111111111111"}, "all its digits are the same"},
		{"log level", Config{Dir: "/tmp/vk", LogLevel: 7}, "Config.LogLevel 7"},
		{"session", Config{Dir: "/tmp/vk", Session: true}, ""},
		{"session with a config folder", Config{Dir: "/tmp/vk", Session: true, ConfigDir: "/run/lv"}, ""},
		{"config folder without session", Config{Dir: "/tmp/vk", ConfigDir: "/run/lv"}, "Config.ConfigDir: only for a session daemon"},
		{"relative config folder", Config{Dir: "/tmp/vk", Session: true, ConfigDir: "run/lv"}, "Config.ConfigDir \"run/lv\": must be an absolute path"},
		{"session with QEMU as another user", Config{Dir: "/tmp/vk", Session: true, QEMUAs: &Owner{UID: 107, GID: 107}}, "Config.QEMUAs: must be nil with Session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestWithDefaultsPicksDistinctValidUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		c, err := Config{Dir: "/tmp/vk"}.WithDefaults()
		assert.NilError(t, err)
		assert.NilError(t, c.Validate())
		assert.Assert(t, !seen[c.HostUUID], "repeated host UUID %s", c.HostUUID)
		seen[c.HostUUID] = true
		assert.Equal(t, c.HostUUID[14], byte('4'), "version 4 UUID: %s", c.HostUUID)
		assert.Equal(t, c.LogLevel, 3)
	}
	kept, err := Config{Dir: "/tmp/vk", HostUUID: "9a1c7e36-5d2b-4f0e-8c3a-6b7d1e2f3a4b"}.WithDefaults()
	assert.NilError(t, err)
	assert.Equal(t, kept.HostUUID, "9a1c7e36-5d2b-4f0e-8c3a-6b7d1e2f3a4b")
}

func TestPathsAndURI(t *testing.T) {
	c := Config{Dir: "/tmp/vk"}
	p := c.Paths()
	assert.Equal(t, p.Socket, "/tmp/vk/run/libvirt-sock")
	assert.Equal(t, p.Cache, "/tmp/vk/cache")
	assert.Equal(t, c.URI(), "qemu:///session?socket=/tmp/vk/run/libvirt-sock")
	c.CacheDir = "/var/cache/shared"
	assert.Check(t, is.Equal(c.Paths().Cache, "/var/cache/shared"))

	// A session daemon keeps its socket where a system one does; its cache
	// folder (QEMU's logs in it) is its own, the shared capabilities linked in.
	c.Session = true
	p = c.Paths()
	assert.Check(t, is.Equal(p.Socket, "/tmp/vk/run/libvirt-sock"))
	assert.Check(t, is.Equal(p.Cache, "/tmp/vk/cache"))
	assert.Check(t, is.Equal(p.QEMULogDir, "/tmp/vk/cache/libvirt/qemu/log"))
}
