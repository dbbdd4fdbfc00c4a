package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PackageList is where every image records the Debian packages it carries,
// a line "NAME VERSION ARCH SHA256" each, sorted by name.
const PackageList = "usr/share/virtkit/packages"

// Path is every image's PATH.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Folders of the packages that no daemon reads: documentation, manuals and
// translations. Build leaves them out.
var skipped = []string{
	"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
	"usr/share/lintian", "usr/share/bug", "usr/share/bash-completion",
}

// Builder builds Images from a folder of binaries and a Debian archive.
type Builder struct {
	bins  string
	pkgs  Packages
	epoch time.Time
	log   logr.Logger
}

// Option changes a Builder.
type Option func(*Builder)

// WithEpoch sets the time stamp of every file and of the image (default:
// the Unix epoch).
func WithEpoch(t time.Time) Option { return func(b *Builder) { b.epoch = t.UTC() } }

// WithLogger logs each layer as it is written.
func WithLogger(l logr.Logger) Option { return func(b *Builder) { b.log = l } }

// NewBuilder returns a Builder taking binaries from the folder bins and
// packages from pkgs.
func NewBuilder(bins string, pkgs Packages, opts ...Option) *Builder {
	b := &Builder{bins: bins, pkgs: pkgs, epoch: time.Unix(0, 0).UTC(), log: logr.Discard()}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Build writes img's layers as files into the folder work, which must stay
// until the returned image has been written out, and returns the image: an
// OCI image for linux on this machine's architecture with three layers (the
// accounts and folders every image has, the packages' files, the binaries).
func (b *Builder) Build(ctx context.Context, img Image, work string) (v1.Image, error) {
	if err := img.Validate(); err != nil {
		return nil, err
	}
	pkgs, err := b.pkgs.Resolve(ctx, img.Packages)
	if err != nil {
		return nil, fmt.Errorf("images: %s: %w", img.Name, err)
	}
	steps := []struct {
		name  string
		write func(*layerWriter) error
	}{
		{"base", b.writeBase},
		{"packages", func(l *layerWriter) error { return b.writePackages(ctx, l, pkgs) }},
		{"binaries", func(l *layerWriter) error { return b.writeBinaries(l, img.Binaries) }},
	}
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	var adds []mutate.Addendum
	for _, s := range steps {
		file := filepath.Join(work, img.Name+"-"+s.name+".tar.gz")
		l, err := newLayerWriter(file, b.epoch)
		if err != nil {
			return nil, fmt.Errorf("images: %s: %w", img.Name, err)
		}
		if err := s.write(l); err != nil {
			l.abort()
			return nil, fmt.Errorf("images: %s: %s layer: %w", img.Name, s.name, err)
		}
		if err := l.close(); err != nil {
			return nil, fmt.Errorf("images: %s: %s layer: %w", img.Name, s.name, err)
		}
		layer, err := openLayer(file)
		if err != nil {
			return nil, fmt.Errorf("images: %s: %s layer: %w", img.Name, s.name, err)
		}
		b.log.V(1).Info("layer written", "image", img.Name, "layer", s.name, "file", file)
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{
			Created: v1.Time{Time: b.epoch}, CreatedBy: "virtkit images: " + s.name,
		}})
	}
	out, err = mutate.Append(out, adds...)
	if err != nil {
		return nil, fmt.Errorf("images: %s: %w", img.Name, err)
	}
	cfg, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("images: %s: %w", img.Name, err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: b.epoch}
	cfg.Config = v1.Config{
		User:       img.User,
		Entrypoint: img.Entrypoint,
		Env:        []string{"PATH=" + Path},
		WorkingDir: "/",
		Labels:     map[string]string{"org.opencontainers.image.title": img.Name},
	}
	out, err = mutate.ConfigFile(out, cfg)
	if err != nil {
		return nil, fmt.Errorf("images: %s: %w", img.Name, err)
	}
	return out, nil
}

// Validate checks that img names a user of Users, binaries and an entry point.
func (img Image) Validate() error {
	var errs []error
	if img.Name == "" || strings.ContainsAny(img.Name, "/:@ ") {
		errs = append(errs, fmt.Errorf("images: Image.Name %q: must be one path element of a repository name", img.Name))
	}
	for i, bin := range img.Binaries {
		if bin == "" || bin != filepath.Base(bin) || bin == "." || bin == ".." {
			errs = append(errs, fmt.Errorf("images: %s: Image.Binaries[%d] %q: must be a file name", img.Name, i, bin))
		}
	}
	if len(img.Entrypoint) == 0 {
		errs = append(errs, fmt.Errorf("images: %s: Image.Entrypoint: required", img.Name))
	}
	if !knownUser(img.User) {
		errs = append(errs, fmt.Errorf("images: %s: Image.User %q: must be UID:GID of one of the images' users", img.Name, img.User))
	} else if img.User == UserRoot && img.Why == "" {
		errs = append(errs, fmt.Errorf("images: %s: Image.Why: required for an image that runs as root", img.Name))
	}
	return errors.Join(errs...)
}

func knownUser(s string) bool {
	for _, u := range Users {
		if s == strconv.Itoa(u.UID)+":"+strconv.Itoa(u.GID) {
			return true
		}
	}
	return false
}

// writeBase writes the accounts and the folders every image has.
func (b *Builder) writeBase(l *layerWriter) error {
	var passwd, group strings.Builder
	for _, u := range Users {
		shell := "/usr/sbin/nologin"
		fmt.Fprintf(&passwd, "%s:x:%d:%d:%s:%s:%s\n", u.Name, u.UID, u.GID, u.Name, u.Home, shell)
	}
	for _, g := range Groups {
		fmt.Fprintf(&group, "%s:x:%d:\n", g.Name, g.GID)
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"etc", 0o755}, {"tmp", 0o1777}, {"run", 0o755}, {"var", 0o755}, {"var/tmp", 0o1777}, {"root", 0o700}, {"home", 0o755}} {
		if err := l.dir(d.name, d.mode); err != nil {
			return err
		}
	}
	if err := l.add(&tar.Header{Typeflag: tar.TypeDir, Name: "home/nonroot", Mode: 0o750, Uid: 65532, Gid: 65532}, nil); err != nil {
		return err
	}
	if err := l.add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "var/run", Linkname: "/run", Mode: 0o777}, nil); err != nil {
		return err
	}
	files := []struct {
		name string
		body string
	}{
		{"etc/passwd", passwd.String()},
		{"etc/group", group.String()},
		{"etc/nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"},
	}
	for _, f := range files {
		if err := l.file(f.name, 0o644, []byte(f.body)); err != nil {
			return err
		}
	}
	return nil
}

// writePackages writes the files of pkgs, then the list of them.
func (b *Builder) writePackages(ctx context.Context, l *layerWriter, pkgs []Package) error {
	var list strings.Builder
	for _, p := range pkgs {
		if err := b.writePackage(ctx, l, p); err != nil {
			return fmt.Errorf("package %s %s: %w", p.Name, p.Version, err)
		}
		fmt.Fprintf(&list, "%s %s %s %s\n", p.Name, p.Version, p.Arch, p.SHA256)
	}
	for _, d := range []string{"usr", "usr/share", "usr/share/virtkit"} {
		if err := l.dir(d, 0o755); err != nil {
			return err
		}
	}
	return l.file(PackageList, 0o644, []byte(list.String()))
}

func (b *Builder) writePackage(ctx context.Context, l *layerWriter, p Package) (err error) {
	rc, err := b.pkgs.Files(ctx, p)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if isSkipped(cleanName(h.Name)) {
			continue
		}
		if err := l.add(h, tr); err != nil {
			if errors.Is(err, errDuplicate) {
				// Two packages may ship one path when one replaces the
				// other's; the first by name wins, as in a stable order.
				b.log.V(1).Info("path shipped twice; keeping the first", "package", p.Name, "error", err.Error())
				continue
			}
			return err
		}
	}
}

func isSkipped(name string) bool {
	for _, s := range skipped {
		if name == s || strings.HasPrefix(name, s+"/") {
			return true
		}
	}
	return false
}

// writeBinaries writes /usr/bin/NAME for each binary.
func (b *Builder) writeBinaries(l *layerWriter, bins []string) error {
	for _, d := range []string{"usr", "usr/bin"} {
		if err := l.dir(d, 0o755); err != nil {
			return err
		}
	}
	for _, bin := range bins {
		if err := b.writeBinary(l, bin); err != nil {
			return err
		}
	}
	return nil
}

func (b *Builder) writeBinary(l *layerWriter, bin string) error {
	file := filepath.Join(b.bins, bin)
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", file)
	}
	if err := l.add(&tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/" + bin, Mode: 0o755, Size: st.Size()}, f); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
