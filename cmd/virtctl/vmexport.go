package main

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// exportFlags are vmexport's flags, KubeVirt's names.
type exportFlags struct {
	vm, snapshot, pvc            string
	volume, output, format       string
	serviceURL, localPort        string
	manifestFormat               string
	insecure, keepVME, deleteVME bool
	manifest, includeSecret      bool
	portForward                  bool
	ttl, readiness               time.Duration
	retries                      int
	labels, annotations          []string
}

func vmexportCommand() command {
	return command{name: "vmexport", use: "vmexport create|delete|download (NAME)", args: 2,
		short: "Export a VM, a VM snapshot or a claim, and download its disks.",
		example: "  # Export a claim and download its disk, gzip-compressed, through the export's external link:\n" +
			"  virtctl vmexport download my-export --pvc=my-disk --output=disk.img.gz\n" +
			"  # Create an export of a stopped VM, then download one of its volumes as raw:\n" +
			"  virtctl vmexport create my-export --vm=my-vm\n" +
			"  virtctl vmexport download my-export --volume=my-disk --format=raw --output=disk.img\n" +
			"  virtctl vmexport delete my-export",
		setup: func(fs *pflag.FlagSet) action {
			var f exportFlags
			fs.StringVar(&f.vm, "vm", "", "The VirtualMachine to export.")
			fs.StringVar(&f.snapshot, "snapshot", "", "The VirtualMachineSnapshot to export.")
			fs.StringVar(&f.pvc, "pvc", "", "The PersistentVolumeClaim to export.")
			fs.StringVar(&f.volume, "volume", "", "The volume to download (required when the export has several).")
			fs.StringVar(&f.output, "output", "", "Where to write the download ('-': standard output).")
			fs.StringVar(&f.format, "format", "", "gzip (the default) or raw: raw downloads gzip and decompresses it.")
			fs.BoolVar(&f.insecure, "insecure", false, "Do not check the export server's certificate.")
			fs.BoolVar(&f.keepVME, "keep-vme", false, "Keep the export this download created.")
			fs.BoolVar(&f.deleteVME, "delete-vme", false, "Delete the export after the download, even one this command did not create.")
			fs.DurationVar(&f.ttl, "ttl", 0, "The export's time to live (default: the export's, 2h).")
			fs.BoolVar(&f.manifest, "manifest", false, "Download the export's manifests instead of a volume.")
			fs.StringVar(&f.manifestFormat, "manifest-output-format", "", "yaml (the default) or json.")
			fs.BoolVar(&f.includeSecret, "include-secret", false, "With --manifest: the Secret of the export's token too.")
			fs.StringVar(&f.serviceURL, "service-url", "", "Reach the export at this host[:port] through its internal links.")
			fs.BoolVar(&f.portForward, "port-forward", false, "Reach the export server through a port forwarded from --local-port to its pod, and its internal links.")
			fs.StringVar(&f.localPort, "local-port", "0", "With --port-forward: the local port.")
			fs.IntVar(&f.retries, "retry", 0, "How many times to try the download again.")
			fs.StringSliceVar(&f.labels, "labels", nil, "Labels of the export (key=value,...).")
			fs.StringSliceVar(&f.annotations, "annotations", nil, "Annotations of the export (key=value,...).")
			fs.DurationVar(&f.readiness, "readiness-timeout", 2*time.Minute, "How long to wait for the export to be ready.")
			return func(ctx context.Context, s *session, args []string) error {
				name := args[1]
				switch args[0] {
				case "create":
					return runExportCreate(ctx, s, name, f)
				case "delete":
					return runExportDelete(ctx, s, name, f)
				case "download":
					return runExportDownload(ctx, s, name, f)
				}
				return exportUsage(fmt.Errorf("invalid function %q: create, delete or download", args[0]))
			}
		}}
}

// say is where messages go: standard error when the download itself goes
// to standard output.
func (f exportFlags) say(s *session) io.Writer {
	if f.output == "-" || (f.manifest && f.output == "") {
		return s.stderr
	}
	return s.stdout
}

func exportUsage(err error) error { return &usageError{cmd: "vmexport", err: err} }

// internal says whether the download takes the export's internal links:
// with --service-url or --port-forward, as KubeVirt's virtctl.
func (f exportFlags) internal() bool { return f.serviceURL != "" || f.portForward }

// source is the export's spec.source the flags name, as KubeVirt's virtctl
// writes it; ok is false when none is named.
func (f exportFlags) source() (corev1.TypedLocalObjectReference, bool, error) {
	var refs []corev1.TypedLocalObjectReference
	if f.vm != "" {
		refs = append(refs, corev1.TypedLocalObjectReference{APIGroup: ptrTo("kubevirt.io"), Kind: "VirtualMachine", Name: f.vm})
	}
	if f.snapshot != "" {
		refs = append(refs, corev1.TypedLocalObjectReference{APIGroup: ptrTo("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: f.snapshot})
	}
	if f.pvc != "" {
		refs = append(refs, corev1.TypedLocalObjectReference{APIGroup: ptrTo(""), Kind: "PersistentVolumeClaim", Name: f.pvc})
	}
	switch len(refs) {
	case 0:
		return corev1.TypedLocalObjectReference{}, false, nil
	case 1:
		return refs[0], true, nil
	}
	return corev1.TypedLocalObjectReference{}, false, exportUsage(errors.New("--vm, --snapshot and --pvc: name one source only"))
}

func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, exportUsage(fmt.Errorf("--%s %q: want key=value", flag, kv))
		}
		m[k] = v
	}
	return m, nil
}

// tokenSecretName is the Secret virtctl makes for an export it creates,
// as KubeVirt's virtctl names it.
func tokenSecretName(export string) string { return "secret-" + export }

// runExportCreate creates the export and its token Secret, as KubeVirt's
// virtctl does.
func runExportCreate(ctx context.Context, s *session, name string, f exportFlags) error {
	src, ok, err := f.source()
	switch {
	case err != nil:
		return err
	case !ok:
		return exportUsage(errors.New("create needs a source: --vm, --snapshot or --pvc"))
	case f.output != "" || f.volume != "" || f.manifest || f.format != "" || f.serviceURL != "" || f.portForward:
		return exportUsage(errors.New("--output, --volume, --format, --manifest, --service-url and --port-forward are download's flags"))
	}
	if err := s.connect(); err != nil {
		return err
	}
	return createExport(ctx, s, name, src, f)
}

func createExport(ctx context.Context, s *session, name string, src corev1.TypedLocalObjectReference, f exportFlags) error {
	labels, err := keyValues("labels", f.labels)
	if err != nil {
		return err
	}
	annotations, err := keyValues("annotations", f.annotations)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: s.ns, Name: name}
	if err := s.kube.Get(ctx, key, &exportv1.VirtualMachineExport{}); err == nil {
		return fmt.Errorf("VirtualMachineExport %s already exists", key)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading VirtualMachineExport %s: %w", key, err)
	}
	vme := &exportv1.VirtualMachineExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name, Labels: labels, Annotations: annotations},
		Spec:       exportv1.VirtualMachineExportSpec{Source: src, TokenSecretRef: ptrTo(tokenSecretName(name))},
	}
	if f.ttl > 0 {
		vme.Spec.TTLDuration = &metav1.Duration{Duration: f.ttl}
	}
	if err := s.kube.Create(ctx, vme); err != nil {
		return fmt.Errorf("creating VirtualMachineExport %s: %w", key, err)
	}
	tok, err := exporttoken.New()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: tokenSecretName(name), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: exportv1.SchemeGroupVersion.String(), Kind: "VirtualMachineExport", Name: name, UID: vme.UID,
			Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(false)}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{exporttoken.Key: []byte(tok)},
	}
	if err := s.kube.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the token Secret %s/%s: %w", s.ns, secret.Name, err)
	}
	fmt.Fprintf(f.say(s), "VirtualMachineExport '%s' created succesfully\n", key)
	return nil
}

// runExportDelete deletes the export; one that does not exist is no error.
func runExportDelete(ctx context.Context, s *session, name string, f exportFlags) error {
	if _, ok, err := f.source(); err != nil || ok {
		return exportUsage(errors.New("delete takes no source flag"))
	}
	if err := s.connect(); err != nil {
		return err
	}
	return deleteExport(ctx, s, name, s.stdout)
}

func deleteExport(ctx context.Context, s *session, name string, say io.Writer) error {
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	if err := s.kube.Delete(ctx, vme); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VirtualMachineExport %s/%s: %w", s.ns, name, err)
	}
	fmt.Fprintf(say, "VirtualMachineExport '%s/%s' deleted succesfully\n", s.ns, name)
	return nil
}

// runExportDownload downloads a volume (or the manifests) of the export,
// creating it first when a source flag is given and it does not exist.
func runExportDownload(ctx context.Context, s *session, name string, f exportFlags) error {
	src, create, err := f.source()
	switch {
	case err != nil:
		return err
	case f.portForward && f.serviceURL != "":
		return exportUsage(errors.New("--port-forward and --service-url: one at most"))
	case f.output == "" && !f.manifest:
		return exportUsage(errors.New("--output is required"))
	case f.manifest && f.pvc != "":
		return exportUsage(errors.New("--manifest does not apply to a claim's export"))
	case f.format != "" && f.format != "gzip" && f.format != "raw":
		return exportUsage(fmt.Errorf("--format %q: gzip or raw", f.format))
	case f.keepVME && f.deleteVME:
		return exportUsage(errors.New("--keep-vme and --delete-vme: one at most"))
	case f.manifestFormat != "" && f.manifestFormat != "yaml" && f.manifestFormat != "json":
		return exportUsage(fmt.Errorf("--manifest-output-format %q: yaml or json", f.manifestFormat))
	}
	if err := s.connect(); err != nil {
		return err
	}
	created := false
	if create {
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &exportv1.VirtualMachineExport{})
		switch {
		case apierrors.IsNotFound(err):
			if err := createExport(ctx, s, name, src, f); err != nil {
				return err
			}
			created = true
		case err != nil:
			return fmt.Errorf("reading VirtualMachineExport %s/%s: %w", s.ns, name, err)
		}
	}
	derr := downloadExport(ctx, s, name, f)
	if !f.manifest && (f.deleteVME || (created && !f.keepVME)) {
		if err := deleteExport(ctx, s, name, f.say(s)); err != nil && derr == nil {
			derr = err
		}
	}
	return derr
}

func downloadExport(ctx context.Context, s *session, name string, f exportFlags) error {
	vme, err := waitExport(ctx, s, name, f)
	if err != nil {
		return err
	}
	link := vme.Status.Links.External
	if f.internal() {
		link = vme.Status.Links.Internal
	}
	serverName := ""
	if f.portForward {
		// The internal links, through a local port forwarded to the
		// server pod; its certificate is still checked for the
		// Service's name the links carry.
		local, stop, err := forwardExport(ctx, s, vme, f.localPort)
		if err != nil {
			return err
		}
		defer stop()
		if serverName, err = linkHost(link); err != nil {
			return err
		}
		f.serviceURL = local
	}
	secretName := ""
	if vme.Status.TokenSecretRef != nil {
		secretName = *vme.Status.TokenSecretRef
	}
	secret := &corev1.Secret{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: secretName}, secret); err != nil {
		return fmt.Errorf("reading the export's token Secret %s/%s: %w", s.ns, secretName, err)
	}
	tok := string(secret.Data[exporttoken.Key])
	hc, err := exportClient(link.Cert, f.insecure, serverName)
	if err != nil {
		return err
	}
	if f.manifest {
		return downloadManifests(ctx, s, hc, link, tok, f)
	}
	u, gz, err := volumeURL(link, f.volume)
	if err != nil {
		return err
	}
	if u, err = serviceHost(u, f.serviceURL); err != nil {
		return err
	}
	return withRetries(ctx, f.retries, func() error {
		return fetch(ctx, hc, u, tok, "", func(body io.Reader) error {
			var r io.Reader = body
			if f.format == "raw" && gz {
				zr, err := gzip.NewReader(body)
				if err != nil {
					return fmt.Errorf("decompressing %s: %w", u, err)
				}
				defer zr.Close()
				r = zr
			}
			return writeOutput(s, f.output, r)
		})
	})
}

// waitExport waits, up to --readiness-timeout, for the export to be Ready
// with the links the download uses.
func waitExport(ctx context.Context, s *session, name string, f exportFlags) (*exportv1.VirtualMachineExport, error) {
	ctx, cancel := context.WithTimeout(ctx, f.readiness)
	defer cancel()
	said := false
	for {
		vme := &exportv1.VirtualMachineExport{}
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, vme)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading VirtualMachineExport %s/%s: %w", s.ns, name, err)
		}
		if err == nil && vme.Status != nil && vme.Status.Phase == exportv1.Ready && vme.Status.Links != nil {
			if f.internal() && vme.Status.Links.Internal != nil || !f.internal() && vme.Status.Links.External != nil {
				return vme, nil
			}
		}
		if err == nil && vme.Status != nil && vme.Status.Phase == exportv1.Skipped {
			return nil, fmt.Errorf("VirtualMachineExport %s/%s is Skipped: %s", s.ns, name, readyMessage(vme))
		}
		if !said {
			fmt.Fprintln(f.say(s), "waiting for VM Export", name, "status to be ready...")
			said = true
		}
		select {
		case <-ctx.Done():
			why := "its phase is not Ready"
			if err == nil && vme.Status != nil && vme.Status.Phase == exportv1.Ready {
				why = "it lists no external links (no export proxy); pass --service-url"
			} else if err == nil {
				why += ": " + readyMessage(vme)
			}
			return nil, fmt.Errorf("timeout waiting for VirtualMachineExport %s/%s to be ready: %s", s.ns, name, why)
		case <-time.After(2 * time.Second):
		}
	}
}

func readyMessage(vme *exportv1.VirtualMachineExport) string {
	if vme.Status != nil {
		for _, c := range vme.Status.Conditions {
			if c.Type == exportv1.ConditionReady {
				return strings.TrimSpace(c.Reason + " " + c.Message)
			}
		}
	}
	return ""
}

// exportClient trusts only the link's certificate, as KubeVirt's virtctl
// does, or nothing with --insecure. serverName, when set, is the name the
// server's certificate must hold (else the URL's host).
func exportClient(certPEM string, insecure bool, serverName string) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if insecure {
		cfg.InsecureSkipVerify = true //nolint:gosec // the user asked
	} else {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(certPEM)) {
			return nil, errors.New("the export's link names no certificate to check its server with; pass --insecure to skip the check")
		}
		cfg.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment}}, nil
}

// volumeURL picks the volume's download link as KubeVirt's virtctl does:
// gzip first, raw otherwise; gz says the link is compressed.
func volumeURL(link *exportv1.VirtualMachineExportLink, volume string) (string, bool, error) {
	var vol *exportv1.VirtualMachineExportVolume
	switch {
	case volume != "":
		for i := range link.Volumes {
			if link.Volumes[i].Name == volume {
				vol = &link.Volumes[i]
			}
		}
		if vol == nil {
			return "", false, fmt.Errorf("volume %s is not in the export", volume)
		}
	case len(link.Volumes) == 1:
		vol = &link.Volumes[0]
	case len(link.Volumes) == 0:
		return "", false, errors.New("the export lists no volume")
	default:
		return "", false, exportUsage(errors.New("the export has several volumes: name one with --volume"))
	}
	raw := ""
	for _, f := range vol.Formats {
		switch f.Format {
		case exportv1.KubeVirtGz, exportv1.ArchiveGz:
			return f.Url, true, nil
		case exportv1.KubeVirtRaw:
			raw = f.Url
		}
	}
	if raw == "" {
		return "", false, fmt.Errorf("volume %s has no downloadable format", vol.Name)
	}
	return raw, false, nil
}

// serviceHost points u at host, with --service-url.
func serviceHost(u, host string) (string, error) {
	if host == "" {
		return u, nil
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	if h, err := url.Parse(host); err == nil && h.Host != "" {
		host = h.Host
	}
	p.Host = host
	return p.String(), nil
}

// downloadManifests writes the export's manifests (and its token Secret
// with --include-secret).
func downloadManifests(ctx context.Context, s *session, hc *http.Client, link *exportv1.VirtualMachineExportLink, tok string, f exportFlags) error {
	accept := "application/yaml"
	if f.manifestFormat == "json" {
		accept = "application/json"
	}
	want := []exportv1.ExportManifestType{exportv1.AllManifests}
	if f.includeSecret {
		want = append(want, exportv1.AuthHeader)
	}
	for _, t := range want {
		u := ""
		for _, m := range link.Manifests {
			if m.Type == t {
				u = m.Url
			}
		}
		if u == "" {
			return fmt.Errorf("the export lists no %s manifest", t)
		}
		u, err := serviceHost(u, f.serviceURL)
		if err != nil {
			return err
		}
		if err := fetch(ctx, hc, u, tok, accept, func(body io.Reader) error { return writeOutput(s, f.output, body) }); err != nil {
			return err
		}
	}
	return nil
}

// fetch GETs u with the token and hands a 200's body to use.
func fetch(ctx context.Context, hc *http.Client, u, tok, accept string, use func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set(exporttoken.Header, tok)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bad status: %s (GET %s)", resp.Status, u)
	}
	return use(resp.Body)
}

func withRetries(ctx context.Context, retries int, do func() error) error {
	for i := 0; ; i++ {
		err := do()
		if err == nil || i >= retries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(2 * time.Second):
		}
	}
}

// writeOutput copies r to the file out, or to standard output for "-".
func writeOutput(s *session, out string, r io.Reader) error {
	if out == "" || out == "-" {
		_, err := io.Copy(s.stdout, r)
		return err
	}
	file, err := os.Create(out)
	if err != nil {
		return err
	}
	n, err := io.Copy(file, r)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	fmt.Fprintf(s.stdout, "Downloading file: %d bytes to %s\n", n, out)
	return nil
}
