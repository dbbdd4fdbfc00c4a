package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	uploadv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/upload/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// uploadPath is where the upload proxy takes an image: CDI's synchronous
// upload endpoint, which KubeVirt's virtctl also uses.
const uploadPath = "/v1beta1/upload"

// uploadFlags are image-upload's flags, KubeVirt's names.
type uploadFlags struct {
	imagePath, archivePath         string
	size, proxyURL                 string
	storageClass, accessMode, mode string
	insecure, noCreate, forceBind  bool
	waitSecs, retries              uint
}

func imageUploadCommand() command {
	return command{name: "image-upload", use: "image-upload dv|pvc (NAME)", args: 2,
		short: "Upload a local disk image into a DataVolume or a claim.",
		example: "  # Upload a disk image into a new 10 GiB DataVolume:\n" +
			"  virtctl image-upload dv fedora --size=10Gi --image-path=fedora.qcow2 --insecure\n" +
			"  # Into an existing DataVolume with an upload source:\n" +
			"  virtctl image-upload dv fedora --no-create --image-path=fedora.qcow2 --uploadproxy-url=https://cdi-uploadproxy.example.com\n" +
			"  # Into a new claim, without a DataVolume:\n" +
			"  virtctl image-upload pvc fedora --size=10Gi --image-path=fedora.qcow2 --insecure",
		setup: func(fs *pflag.FlagSet) action {
			var f uploadFlags
			fs.StringVar(&f.imagePath, "image-path", "", "Path to the local disk image (raw, qcow2, vmdk, vdi, vhd, vhdx; gzip or xz compressed).")
			fs.StringVar(&f.archivePath, "archive-path", "", "Path to a local tar archive (gzip or xz compressed or not), extracted into the volume's file system instead of a disk image.")
			fs.StringVar(&f.size, "size", "", "The size of the DataVolume to create (ex. 10Gi, 500Mi).")
			fs.StringVar(&f.proxyURL, "uploadproxy-url", "", "The URL of the upload proxy (virt-api); empty: the CDIConfig's.")
			fs.BoolVar(&f.insecure, "insecure", false, "Do not check the upload proxy's certificate.")
			fs.BoolVar(&f.noCreate, "no-create", false, "Do not create the DataVolume: upload into an existing one.")
			fs.StringVar(&f.storageClass, "storage-class", "", "The storage class of the claim.")
			fs.StringVar(&f.accessMode, "access-mode", "", "The access mode of the claim.")
			fs.StringVar(&f.mode, "volume-mode", "", "The volume mode of the claim: block or filesystem.")
			fs.BoolVar(&f.forceBind, "force-bind", false, "Force bind the PVC, ignoring the WaitForFirstConsumer logic.")
			fs.UintVar(&f.waitSecs, "wait-secs", 300, "Seconds to wait for the upload pod to be ready.")
			fs.UintVar(&f.retries, "retry", 5, "How many times to send the image when the upload server answers it cannot take it yet.")
			return func(ctx context.Context, s *session, args []string) error {
				switch strings.ToLower(args[0]) {
				case "dv":
					return runImageUpload(ctx, s, args[1], f, dvTarget{forceBind: f.forceBind})
				case "pvc":
					return runImageUpload(ctx, s, args[1], f, claimTarget{})
				}
				return &usageError{cmd: "image-upload", err: fmt.Errorf("invalid resource type %s: dv or pvc", args[0])}
			}
		}}
}

// uploadTarget is what an upload fills: a DataVolume or a bare claim.
type uploadTarget interface {
	// ensure makes it unless --no-create, or checks it takes an upload.
	ensure(ctx context.Context, s *session, name string, f uploadFlags) error
	// wait waits for its upload pod to be ready (stored false) or for the
	// upload to be stored (stored true).
	wait(ctx context.Context, s *session, name string, timeout time.Duration, stored bool) error
}

type dvTarget struct {
	// forceBind: the DataVolume was asked to bind at once (--force-bind);
	// otherwise one waiting for its first consumer takes no upload.
	forceBind bool
}

func (dvTarget) ensure(ctx context.Context, s *session, name string, f uploadFlags) error {
	return ensureUploadDV(ctx, s, name, f)
}

func (t dvTarget) wait(ctx context.Context, s *session, name string, timeout time.Duration, stored bool) error {
	if stored {
		return waitDV(ctx, s, name, timeout, "the upload to be processed", func(dv *cdiv1.DataVolume) (bool, error) { return dv.Status.Phase == cdiv1.Succeeded, nil })
	}
	return waitDV(ctx, s, name, timeout, "its upload pod to be ready", func(dv *cdiv1.DataVolume) (bool, error) {
		if p := dv.Status.Phase; (p == cdiv1.WaitForFirstConsumer || p == cdiv1.PendingPopulation) && !t.forceBind {
			// KubeVirt's virtctl's words.
			return false, fmt.Errorf("cannot upload to DataVolume in %s phase, make sure the PVC is Bound, or use force-bind flag", p)
		}
		return dv.Status.Phase == cdiv1.UploadReady, nil
	})
}

// path is the file to upload: the disk image or the archive.
func (f uploadFlags) path() string {
	if f.archivePath != "" {
		return f.archivePath
	}
	return f.imagePath
}

// contentType is the DataVolume's content type of the upload: archive
// with --archive-path.
func (f uploadFlags) contentType() cdiv1.DataVolumeContentType {
	if f.archivePath != "" {
		return cdiv1.DataVolumeArchive
	}
	return cdiv1.DataVolumeKubeVirt
}

// runImageUpload uploads as KubeVirt's virtctl does: the DataVolume or
// claim (made unless --no-create), its upload pod ready, a token from an
// UploadTokenRequest, the image POSTed to the proxy, then the claim filled.
func runImageUpload(ctx context.Context, s *session, name string, f uploadFlags, target uploadTarget) error {
	switch {
	case (f.imagePath == "") == (f.archivePath == ""):
		return &usageError{cmd: "image-upload", err: errors.New("either --image-path or --archive-path must be provided")}
	case f.mode != "" && f.mode != "block" && f.mode != "filesystem":
		return &usageError{cmd: "image-upload", err: fmt.Errorf("--volume-mode %q: must be block or filesystem", f.mode)}
	case f.archivePath != "" && f.mode == "block":
		// KubeVirt's virtctl's words.
		return &usageError{cmd: "image-upload", err: errors.New("in archive upload the volume mode should always be filesystem")}
	}
	file, err := os.Open(f.path())
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", f.path())
	}
	if err := s.connect(); err != nil {
		return err
	}
	if f.proxyURL == "" {
		u, err := proxyFromConfig(ctx, s)
		if err != nil {
			return err
		}
		f.proxyURL = u
	}
	if err := target.ensure(ctx, s, name, f); err != nil {
		return err
	}
	if err := target.wait(ctx, s, name, time.Duration(f.waitSecs)*time.Second, false); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "Uploading data to %s\n", f.proxyURL)
	if err := sendImage(ctx, s, name, f, file, fi.Size()); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout, "Uploading data completed successfully, waiting for processing to complete, you can hit ctrl-c without interrupting the progress")
	if err := target.wait(ctx, s, name, 24*time.Hour, true); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "Uploading %s completed successfully\n", f.path())
	return nil
}

// proxyFromConfig reads the upload proxy's address from the CDIConfig
// "config", as KubeVirt's virtctl does: its spec's override, else its
// status.
func proxyFromConfig(ctx context.Context, s *session) (string, error) {
	cfg := &cdiv1.CDIConfig{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: "config"}, cfg); err != nil {
		return "", fmt.Errorf("no --uploadproxy-url, and reading CDIConfig config for it: %w", err)
	}
	switch {
	case cfg.Spec.UploadProxyURLOverride != nil && *cfg.Spec.UploadProxyURLOverride != "":
		return *cfg.Spec.UploadProxyURLOverride, nil
	case cfg.Status.UploadProxyURL != nil && *cfg.Status.UploadProxyURL != "":
		return *cfg.Status.UploadProxyURL, nil
	}
	return "", errors.New("uploadproxy URL not found: the CDIConfig config names none; pass --uploadproxy-url, " +
		"or set the CDIConfig's spec.uploadProxyURLOverride to where users reach virt-api")
}

// ensureUploadDV makes the DataVolume unless --no-create or it exists; an
// existing one must have an upload source and not be filled yet.
func ensureUploadDV(ctx context.Context, s *session, name string, f uploadFlags) error {
	dv := &cdiv1.DataVolume{}
	err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, dv)
	switch {
	case err == nil:
		if dv.Spec.Source == nil || dv.Spec.Source.Upload == nil {
			return fmt.Errorf("DataVolume %s/%s not available for upload: its source is not an upload", s.ns, name)
		}
		if dv.Status.Phase == cdiv1.Succeeded {
			return fmt.Errorf("DataVolume %s/%s already successfully imported/cloned/updated", s.ns, name)
		}
		fmt.Fprintf(s.stdout, "Using existing DataVolume %s/%s\n", s.ns, name)
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading DataVolume %s/%s: %w", s.ns, name, err)
	case f.noCreate:
		return fmt.Errorf("DataVolume %s/%s not found, and --no-create says not to create it", s.ns, name)
	case f.size == "":
		return &usageError{cmd: "image-upload", err: errors.New("when creating a DataVolume, --size must be specified")}
	}
	size, err := resource.ParseQuantity(f.size)
	if err != nil {
		return &usageError{cmd: "image-upload", err: fmt.Errorf("--size %s: %w", f.size, err)}
	}
	st := &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}
	if f.storageClass != "" {
		st.StorageClassName = &f.storageClass
	}
	if f.accessMode != "" {
		if f.accessMode == string(corev1.ReadOnlyMany) {
			return errors.New("cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported")
		}
		st.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(f.accessMode)}
	}
	switch f.mode {
	case "block":
		st.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
	case "filesystem":
		st.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	dv = &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name, Annotations: bindAnnotations(f)},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Upload: &cdiv1.DataVolumeSourceUpload{}},
			ContentType: f.contentType(), Storage: st}}
	if err := s.kube.Create(ctx, dv); err != nil {
		return fmt.Errorf("creating DataVolume %s/%s: %w", s.ns, name, err)
	}
	fmt.Fprintf(s.stdout, "DataVolume %s/%s created\n", s.ns, name)
	return nil
}

// waitDV polls the DataVolume until done says so or returns an error, it
// fails, or timeout passes.
func waitDV(ctx context.Context, s *session, name string, timeout time.Duration, what string, done func(*cdiv1.DataVolume) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	said := false
	for {
		dv := &cdiv1.DataVolume{}
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, dv)
		var ok bool
		var derr error
		if err == nil {
			ok, derr = done(dv)
		}
		switch {
		case derr != nil:
			return derr
		case ok:
			return nil
		case err == nil && dv.Status.Phase == cdiv1.Failed:
			return fmt.Errorf("DataVolume %s/%s failed: %s", s.ns, name, runningMessage(dv))
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading DataVolume %s/%s: %w", s.ns, name, err)
		}
		if !said {
			fmt.Fprintf(s.stdout, "Waiting for %s...\n", what)
			said = true
		}
		select {
		case <-ctx.Done():
			last := "not found"
			if err == nil {
				last = fmt.Sprintf("phase %s: %s", dv.Status.Phase, runningMessage(dv))
			}
			return fmt.Errorf("timed out waiting for %s of DataVolume %s/%s (%s)", what, s.ns, name, last)
		case <-time.After(s.poll):
		}
	}
}

// runningMessage is the reason and message of dv's Running condition.
func runningMessage(dv *cdiv1.DataVolume) string {
	for _, c := range dv.Status.Conditions {
		if c.Type == cdiv1.DataVolumeRunning {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "no Running condition"
}

// sendImage posts the file to the proxy with a fresh token, again while the
// upload server says it cannot take it yet (503), as KubeVirt's virtctl.
func sendImage(ctx context.Context, s *session, name string, f uploadFlags, file *os.File, size int64) error {
	target, err := url.Parse(f.proxyURL)
	if err != nil {
		return &usageError{cmd: "image-upload", err: fmt.Errorf("--uploadproxy-url: %w", err)}
	}
	if target.Scheme == "" {
		target, _ = url.Parse("https://" + f.proxyURL)
	}
	if !strings.HasSuffix(target.Path, uploadPath) {
		target = target.JoinPath(uploadPath)
	}
	hc := &http.Client{}
	if f.insecure {
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // asked for by --insecure
	}
	var last error
	for attempt := uint(0); attempt < max(f.retries, 1); attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(s.poll):
			}
		}
		tok := &uploadv1beta1.UploadTokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, GenerateName: "token-for-virtctl-"},
			Spec: uploadv1beta1.UploadTokenRequestSpec{PvcName: name}}
		if err := s.kube.Create(ctx, tok); err != nil {
			return fmt.Errorf("requesting an upload token for %s/%s: %w", s.ns, name, err)
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), io.NopCloser(file))
		if err != nil {
			return err
		}
		req.ContentLength = size
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return nil
		case http.StatusServiceUnavailable, http.StatusBadGateway:
			last = fmt.Errorf("unexpected return value %d, %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		default:
			return fmt.Errorf("unexpected return value %d, %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		}
	}
	return fmt.Errorf("error uploading image after %d retries: %w", max(f.retries, 1), last)
}
