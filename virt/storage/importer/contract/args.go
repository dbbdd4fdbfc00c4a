package contract

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Source kinds the importer reads.
const (
	SourceHTTP  = "http"
	SourceBlank = "blank"
	// SourceRegistry pulls a containerDisk image from a registry itself
	// (CDI's pullMethod pod): URL is docker://IMAGE.
	SourceRegistry = "registry"
	// SourceFile reads a file of a volume mounted in the pod: a cloned
	// claim's disk, or a containerDisk image's (an image volume).
	SourceFile = "file"
	// SourceUpload serves an upload server (virt/storage/upload) on
	// UploadPort and imports the one upload the proxy sends.
	SourceUpload = "upload"
	// SourceSend is not an import: it reads the file Path and sends it to
	// the upload server at URL (a clone's source pod, in the source
	// claim's namespace), with the TLS files of CloneTLSDir.
	SourceSend = "send"
)

// RegistryScheme prefixes a registry source's image reference, as in
// CDI's URLs.
const RegistryScheme = "docker://"

// Args are the importer's flags, rendered by the controller into the
// container's command and parsed by the daemon.
type Args struct {
	// Source is SourceHTTP, SourceRegistry, SourceFile, SourceUpload or
	// SourceBlank.
	Source string
	// URL is an http source's address, or a registry source's
	// docker://IMAGE.
	URL string
	// Path is a file source's file, or its folder of one file.
	Path string
	// Name names a file source in messages (the claim or the image).
	Name string
	// Headers are extra request headers, "Name: value" each.
	Headers []string
	// CertDir, when set, holds the only CAs an https or registry source
	// is checked against.
	CertDir string
	// ProxyCertDir, when set, holds CAs an https or registry source is
	// checked against besides CertDir's (or the system's): the import
	// proxy's.
	ProxyCertDir string
	// InsecureRegistry skips a registry source's TLS certificate check
	// and allows plain HTTP (the CDIConfig's insecureRegistries).
	InsecureRegistry bool
	// Architecture picks a registry source's image of an image index
	// (CDI's platform.architecture); default the importer's.
	Architecture string
	// Target is the disk file or block device to write.
	Target string
	// Block is set when Target is a block device.
	Block bool
	// Size is the virtual size the disk gets, in bytes.
	Size int64
	// Scratch is the folder for images that cannot be streamed (the
	// scratch claim, ScratchDir); empty: the pod has none, and an image
	// that needs it ends the import with Outcome.ScratchRequired.
	Scratch string
	// OwnerUID labels the progress metric (the DataVolume's UID).
	OwnerUID string
	// Checksum is "algorithm:hex" the downloaded bytes must match; empty:
	// not checked.
	Checksum string
	// ClientName is the common name of the upload proxy's client
	// certificate, which an upload source's server requires.
	ClientName string
	// Preallocate allocates every block of a file Target once written
	// (CDI's preallocation).
	Preallocate bool
	// Archive makes Target a folder into which the source, a tar
	// archive, is extracted (CDI's content type archive).
	Archive bool
}

// Command is the importer container's command for a.
func (a Args) Command() []string {
	cmd := []string{Binary, "--source", a.Source}
	if a.Target != "" {
		cmd = append(cmd, "--target", a.Target)
	}
	if a.Size != 0 {
		cmd = append(cmd, "--size", strconv.FormatInt(a.Size, 10))
	}
	if a.URL != "" {
		cmd = append(cmd, "--url", a.URL)
	}
	if a.Path != "" {
		cmd = append(cmd, "--path", a.Path)
	}
	if a.Name != "" {
		cmd = append(cmd, "--name", a.Name)
	}
	for _, h := range a.Headers {
		cmd = append(cmd, "--header", h)
	}
	if a.CertDir != "" {
		cmd = append(cmd, "--cert-dir", a.CertDir)
	}
	if a.ProxyCertDir != "" {
		cmd = append(cmd, "--proxy-cert-dir", a.ProxyCertDir)
	}
	if a.InsecureRegistry {
		cmd = append(cmd, "--insecure-registry")
	}
	if a.Architecture != "" {
		cmd = append(cmd, "--architecture", a.Architecture)
	}
	if a.Block {
		cmd = append(cmd, "--block")
	}
	if a.Scratch != "" {
		cmd = append(cmd, "--scratch", a.Scratch)
	}
	if a.OwnerUID != "" {
		cmd = append(cmd, "--owner-uid", a.OwnerUID)
	}
	if a.Checksum != "" {
		cmd = append(cmd, "--checksum", a.Checksum)
	}
	if a.ClientName != "" {
		cmd = append(cmd, "--client-name", a.ClientName)
	}
	if a.Preallocate {
		cmd = append(cmd, "--preallocate")
	}
	if a.Archive {
		cmd = append(cmd, "--archive")
	}
	return cmd
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// Parse reads the flags Command renders (without the program name).
func Parse(args []string, output io.Writer) (Args, error) {
	var a Args
	fs := flag.NewFlagSet(Binary, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&a.Source, "source", "", "where the image comes from: http, registry, file, upload or blank; or send, to send a file to an upload server")
	fs.StringVar(&a.URL, "url", "", "the http source's URL, or the registry source's docker://IMAGE")
	fs.StringVar(&a.Path, "path", "", "the file source's file, or its folder of one file")
	fs.StringVar(&a.Name, "name", "", "what the file source is, for messages")
	fs.Var((*headers)(&a.Headers), "header", "an extra request header, \"Name: value\" (repeatable)")
	fs.StringVar(&a.CertDir, "cert-dir", "", "folder of the CA certificates an https or registry source is checked against")
	fs.StringVar(&a.ProxyCertDir, "proxy-cert-dir", "", "folder of the import proxy's CA certificates, trusted besides the others")
	fs.BoolVar(&a.InsecureRegistry, "insecure-registry", false, "a registry source: skip the TLS certificate check and allow plain HTTP")
	fs.StringVar(&a.Architecture, "architecture", "", "a registry source: the architecture of the image to pick from an image index")
	fs.StringVar(&a.Target, "target", "", "the disk file or block device to write")
	fs.BoolVar(&a.Block, "block", false, "the target is a block device")
	fs.Int64Var(&a.Size, "size", 0, "the disk's virtual size in bytes")
	fs.StringVar(&a.Scratch, "scratch", "", "folder for images that must be downloaded before conversion")
	fs.StringVar(&a.OwnerUID, "owner-uid", "", "the DataVolume's UID, labelling the progress metric")
	fs.StringVar(&a.Checksum, "checksum", "", "algorithm:hex the downloaded bytes must match")
	fs.StringVar(&a.ClientName, "client-name", "", "an upload source's proxy: the common name its client certificate must have")
	fs.BoolVar(&a.Preallocate, "preallocate", false, "allocate every block of a file target once written")
	fs.BoolVar(&a.Archive, "archive", false, "the source is a tar archive, extracted into the folder --target")
	if err := fs.Parse(args); err != nil {
		return Args{}, err
	}
	if fs.NArg() > 0 {
		return Args{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return a, a.Validate()
}

// Validate says what is missing or wrong in a.
func (a Args) Validate() error {
	var errs []error
	switch a.Source {
	case SourceHTTP:
		if a.URL == "" {
			errs = append(errs, errors.New("--url: required for an http source"))
		}
	case SourceRegistry:
		if image, ok := strings.CutPrefix(a.URL, RegistryScheme); !ok || image == "" {
			errs = append(errs, fmt.Errorf("--url %q: a registry source's must be %sIMAGE", a.URL, RegistryScheme))
		}
	case SourceFile:
		if a.Path == "" {
			errs = append(errs, errors.New("--path: required for a file source"))
		}
	case SourceUpload:
		if a.ClientName == "" {
			errs = append(errs, errors.New("--client-name: required for an upload source"))
		}
	case SourceSend:
		if a.Path == "" || a.URL == "" {
			errs = append(errs, errors.New("--path and --url: required to send"))
		}
	case SourceBlank:
	default:
		errs = append(errs, fmt.Errorf("--source %q: must be %s, %s, %s, %s, %s or %s", a.Source, SourceHTTP, SourceRegistry, SourceFile, SourceUpload, SourceSend, SourceBlank))
	}
	if a.Target == "" && a.Source != SourceSend {
		errs = append(errs, errors.New("--target: required"))
	}
	if a.Size <= 0 && a.Source != SourceSend {
		errs = append(errs, fmt.Errorf("--size %d: must be positive", a.Size))
	}
	for _, h := range a.Headers {
		if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("--header %q: must be \"Name: value\"", h))
		}
	}
	return errors.Join(errs...)
}
