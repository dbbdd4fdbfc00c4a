package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Binary is the export server's program (virt-exportserver), the command of
// a server pod's container.
const Binary = "/usr/bin/virt-exportserver"

// Config is what one export server serves, and how.
type Config struct {
	// Export is the VirtualMachineExport's name; it names the
	// auth-header Secret manifest.
	Export string
	// Listen is the address to listen on; default ":8443".
	Listen string
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// TokenFile holds the token every request but readiness must carry.
	// It is read again for each request, so a rotated Secret applies at
	// once.
	TokenFile string
	// Deadline, when set, is when the server stops: the export's TTL or
	// its certificate's renewal, whichever comes first.
	Deadline time.Time
	// Volumes are the claims served.
	Volumes []Volume
	// ManifestDir, when set, holds the VM manifests (ManifestFile) served
	// at ManifestPath(a, "all"): an export of a VM or a snapshot.
	ManifestDir string
}

// The environment variables a server pod's Config is passed in. The first
// four are KubeVirt's own names.
const (
	envCert     = "CERT_FILE"
	envKey      = "KEY_FILE"
	envToken    = "TOKEN_FILE"
	envDeadline = "DEADLINE"
	envListen   = "LISTEN_ADDR"
	envExport   = "EXPORT_NAME"
	envVolumes  = "EXPORT_VOLUMES"
	envManifest = "EXPORT_MANIFEST_DIR"
)

// maxVolumesEnv bounds the encoded volumes a server accepts.
const maxVolumesEnv = 256 << 10

// Env returns c as the environment of a server pod, in a stable order.
func (c Config) Env() ([][2]string, error) {
	vols, err := json.Marshal(c.Volumes)
	if err != nil {
		return nil, fmt.Errorf("export %s: volumes: %w", c.Export, err)
	}
	env := [][2]string{{envExport, c.Export}, {envCert, c.CertFile}, {envKey, c.KeyFile}, {envToken, c.TokenFile}, {envVolumes, string(vols)}}
	if c.Listen != "" {
		env = append(env, [2]string{envListen, c.Listen})
	}
	if c.ManifestDir != "" {
		env = append(env, [2]string{envManifest, c.ManifestDir})
	}
	if !c.Deadline.IsZero() {
		env = append(env, [2]string{envDeadline, c.Deadline.UTC().Format(time.RFC3339)})
	}
	return env, nil
}

// ConfigFromEnv reads a Config from the environment lookup returns (as
// os.LookupEnv does), the inverse of Env, and validates it.
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	c := Config{Export: get(envExport), CertFile: get(envCert), KeyFile: get(envKey), TokenFile: get(envToken), Listen: get(envListen),
		ManifestDir: get(envManifest)}
	if d := get(envDeadline); d != "" {
		t, err := time.Parse(time.RFC3339, d)
		if err != nil {
			return Config{}, fmt.Errorf("%s %s: %w", envDeadline, strconv.Quote(d), err)
		}
		c.Deadline = t
	}
	vols := get(envVolumes)
	if len(vols) > maxVolumesEnv {
		return Config{}, fmt.Errorf("%s: %d bytes, more than %d", envVolumes, len(vols), maxVolumesEnv)
	}
	if vols != "" {
		if err := json.Unmarshal([]byte(vols), &c.Volumes); err != nil {
			return Config{}, fmt.Errorf("%s: %w", envVolumes, err)
		}
	}
	return c, c.Validate()
}

// Address is where the server listens: Listen, or every address on
// ServerPort.
func (c Config) Address() string {
	if c.Listen != "" {
		return c.Listen
	}
	return ":" + strconv.Itoa(ServerPort)
}

// Validate reports what makes c unusable, naming the setting.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{{envExport, c.Export}, {envCert, c.CertFile}, {envKey, c.KeyFile}, {envToken, c.TokenFile}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		}
	}
	seen := map[string]bool{}
	for _, v := range c.Volumes {
		if err := v.validate(); err != nil {
			errs = append(errs, err)
		} else if seen[v.Claim] {
			errs = append(errs, fmt.Errorf("volume %s: served twice", v.Claim))
		}
		seen[v.Claim] = true
	}
	return errors.Join(errs...)
}
