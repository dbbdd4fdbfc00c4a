package images

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// APT resolves packages with apt-cache and apt-get (the host's Debian
// archive configuration) and opens them with dpkg-deb. Downloaded .deb
// files stay in Cache, named as the archive names them, and are fetched
// again only when missing or when their digest does not match.
type APT struct {
	// Cache is the folder of downloaded packages.
	Cache string
	// Omit are packages left out of every resolution (what they depend on
	// stays when something else needs it): those only dpkg and its
	// maintainer scripts use, which never run in an image.
	Omit []string
}

// DefaultOmit are the packages an image needs only to be managed by dpkg.
var DefaultOmit = []string{"adduser", "cdebconf", "debconf", "dpkg", "install-info", "passwd", "perl-base", "tar"}

var _ Packages = (*APT)(nil)

// Resolve implements Packages.
func (a *APT) Resolve(ctx context.Context, names []string) ([]Package, error) {
	if len(names) == 0 {
		return nil, nil
	}
	closure, err := a.closure(ctx, names)
	if err != nil {
		return nil, err
	}
	pkgs, err := a.uris(ctx, closure)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range pkgs {
		if ok, err := a.cached(p); err != nil {
			return nil, err
		} else if !ok {
			missing = append(missing, p.Name+"="+p.Version)
		}
	}
	if len(missing) > 0 {
		if err := os.MkdirAll(a.Cache, 0o755); err != nil {
			return nil, fmt.Errorf("apt: %w", err)
		}
		if _, err := run(ctx, a.Cache, "apt-get", append([]string{"download", "-q"}, missing...)...); err != nil {
			return nil, err
		}
	}
	out := make([]Package, 0, len(pkgs))
	for _, p := range pkgs {
		if ok, err := a.cached(p); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("apt: %s %s: the downloaded file %s does not have the archive's digest %s", p.Name, p.Version, a.file(p), p.SHA256)
		}
		out = append(out, p)
	}
	return out, nil
}

// Files implements Packages with dpkg-deb --fsys-tarfile.
func (a *APT) Files(ctx context.Context, p Package) (io.ReadCloser, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", a.file(p))
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dpkg-deb: %w", err)
	}
	return &cmdReader{r: out, cmd: cmd, stderr: &stderr}, nil
}

// file is where p's .deb is cached: the archive's file name,
// NAME_VERSION_ARCH.deb with the version's colon escaped.
func (a *APT) file(p Package) string {
	return filepath.Join(a.Cache, p.Name+"_"+strings.ReplaceAll(p.Version, ":", "%3a")+"_"+p.Arch+".deb")
}

// cached reports whether p's .deb is in the cache with its digest.
func (a *APT) cached(p Package) (bool, error) {
	f, err := os.Open(a.file(p))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("apt: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("apt: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)) == p.SHA256, nil
}

// closure lists names and their dependencies, without the omitted ones.
func (a *APT) closure(ctx context.Context, names []string) ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
		"--no-breaks", "--no-replaces", "--no-enhances"}, names...)
	out, err := run(ctx, "", "apt-cache", args...)
	if err != nil {
		return nil, err
	}
	omit := map[string]bool{}
	for _, n := range a.Omit {
		omit[n] = true
	}
	seen := map[string]bool{}
	var list []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		// Top-level lines are packages; indented ones their relations;
		// <NAME> is a virtual package, which has no files.
		if line == "" || line[0] == ' ' || line[0] == '<' || omit[line] || seen[line] {
			continue
		}
		seen[line] = true
		list = append(list, line)
	}
	sort.Strings(list)
	return list, nil
}

// uris asks apt-get which file of which version each package is, without
// downloading anything (in an empty folder, so that none counts as present).
func (a *APT) uris(ctx context.Context, names []string) ([]Package, error) {
	empty, err := os.MkdirTemp("", "virtkit-apt-")
	if err != nil {
		return nil, fmt.Errorf("apt: %w", err)
	}
	defer os.RemoveAll(empty)
	out, err := run(ctx, empty, "apt-get", append([]string{"download", "--print-uris", "-q"}, names...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		p, ok, err := parseURILine(sc.Text())
		if err != nil {
			return nil, err
		}
		if ok {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) != len(names) {
		return nil, fmt.Errorf("apt: asked for %d packages, the archive offers %d", len(names), len(pkgs))
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
	return pkgs, nil
}

// parseURILine reads a line of `apt-get download --print-uris`:
//
//	'http://.../libc6_2.36-9%2bdeb12u14_amd64.deb' libc6_2.36-9+deb12u14_amd64.deb 2759320 SHA256:ba4f...
func parseURILine(line string) (Package, bool, error) {
	f := strings.Fields(line)
	if len(f) != 4 || !strings.HasPrefix(f[0], "'") {
		return Package{}, false, nil
	}
	file, size, sum := f[1], f[2], f[3]
	if _, err := strconv.ParseInt(size, 10, 64); err != nil || !strings.HasPrefix(sum, "SHA256:") {
		return Package{}, false, fmt.Errorf("apt: unexpected line %q: want URI, file, size and SHA256", line)
	}
	parts := strings.Split(strings.TrimSuffix(file, ".deb"), "_")
	if len(parts) != 3 || !strings.HasSuffix(file, ".deb") {
		return Package{}, false, fmt.Errorf("apt: unexpected file name %q in %q", file, line)
	}
	version, err := url.PathUnescape(parts[1])
	if err != nil {
		return Package{}, false, fmt.Errorf("apt: file name %q: %w", file, err)
	}
	return Package{Name: parts[0], Version: version, Arch: parts[2], SHA256: strings.TrimPrefix(sum, "SHA256:")}, true, nil
}

// run runs a command in dir and returns its standard output; an error
// carries the end of its standard error.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, max: 64 << 10}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// cmdReader is a command's standard output; Close waits for the command.
type cmdReader struct {
	r      io.ReadCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func (c *cmdReader) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *cmdReader) Close() error {
	_, _ = io.Copy(io.Discard, c.r)
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(c.cmd.Args, " "), err, strings.TrimSpace(c.stderr.String()))
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
