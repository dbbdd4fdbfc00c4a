package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/ulikunitz/xz"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/storageprofile"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/csidriver"
)

// imageServer is a real HTTPS server of disk images with a CA of its own,
// basic auth and a required header, on an address of this machine that
// pods reach through their network.
type imageServer struct {
	url   string // https://host:port
	caPEM []byte
	// registry is a container registry (go-containerregistry's, in
	// memory) served under /v2/ with the same certificate and credentials.
	registry http.Handler
	mu       sync.Mutex
	images   map[string][]byte
	gets     map[string]int
}

const (
	imageUser   = "importer"
	imagePass   = "Tr0ub4dor&3"
	imageHeader = "X-Virtkit-Mirror"
)

func startImageServer(t *testing.T) *imageServer {
	t.Helper()
	host := hostAddress(t)
	ca, err := certs.NewCA("image server test CA", time.Now(), 24*time.Hour)
	must(t, err)
	leaf, err := ca.Issue(certs.Request{CommonName: host.String(), IPs: []net.IP{host}, Server: true, Validity: 2 * time.Hour}, time.Now())
	must(t, err)
	pair, err := tls.X509KeyPair(leaf.CertPEM(), leaf.KeyPEM())
	must(t, err)
	l, err := net.Listen("tcp", net.JoinHostPort(host.String(), "0"))
	must(t, err)
	s := &imageServer{url: "https://" + l.Addr().String(), caPEM: ca.CertPEM(),
		registry: registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		images:   map[string][]byte{}, gets: map[string]int{}}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *imageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != imageUser || p != imagePass {
		w.Header().Set("WWW-Authenticate", `Basic realm="virtkit e2e"`)
		http.Error(w, "credentials, please", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v2/") {
		s.registry.ServeHTTP(w, r)
		return
	}
	if r.Header.Get(imageHeader) != "eu" {
		http.Error(w, "which mirror?", http.StatusBadRequest)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	b, ok := s.images[name]
	s.gets[name]++
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasPrefix(name, "slow/") {
		// 1 MiB a second, so that an import is seen in progress.
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		for off := 0; off < len(b); off += 256 << 10 {
			if _, err := w.Write(b[off:min(off+256<<10, len(b))]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(250 * time.Millisecond)
		}
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// guestImageServer starts an image server serving the test guest's disk
// as guest.qcow2.
func guestImageServer(t *testing.T) *imageServer {
	t.Helper()
	s := startImageServer(t)
	root, err := os.ReadFile(testenv.Output(t, "guest", "disk.qcow2"))
	must(t, err)
	s.put("guest.qcow2", root)
	return s
}

// pushImage copies an image of virt-local's registry (repoTag) to the
// server's registry and returns its reference there.
func (s *imageServer) pushImage(t *testing.T, w *world, repoTag string) string {
	t.Helper()
	from, err := name.ParseReference(w.localImage(repoTag), name.Insecure)
	must(t, err)
	img, err := remote.Image(from)
	must(t, err)
	return s.push(t, img, repoTag)
}

// push writes img to the server's registry as repoTag and returns its
// reference there.
func (s *imageServer) push(t *testing.T, img v1.Image, repoTag string) string {
	t.Helper()
	to, err := name.ParseReference(strings.TrimPrefix(s.url, "https://") + "/" + repoTag)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	must(t, remote.Write(to, img, remote.WithAuth(&authn.Basic{Username: imageUser, Password: imagePass}), remote.WithTransport(tr)))
	return to.String()
}

func (s *imageServer) put(name string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[name] = b
}

// hostAddress is an IPv4 address of this machine other than loopback and
// the pods' ranges: pods reach it through their default route.
func hostAddress(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	must(t, err)
	_, pods, _ := net.ParseCIDR("10.88.0.0/16")
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !pods.Contains(n.IP) {
			return n.IP.To4()
		}
	}
	t.Fatal("no address of this machine that pods can reach")
	return nil
}

// markedDisk is a raw disk of size bytes whose first sector carries the
// test guest's data marker n.
func markedDisk(n, size int) []byte {
	b := make([]byte, size)
	copy(b, fmt.Sprintf("VIRTKIT-DATA n=%d\n", n))
	return b
}

func gzipOf(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, err := zw.Write(b)
	must(t, err)
	must(t, zw.Close())
	return out.Bytes()
}

func xzOf(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	zw, err := xz.NewWriter(&out)
	must(t, err)
	_, err = zw.Write(b)
	must(t, err)
	must(t, zw.Close())
	return out.Bytes()
}

// importSecrets makes the CA ConfigMap and the credentials Secret an http
// source names, in ns.
func (w *world) importSecrets(ctx context.Context, t *testing.T, ns string, s *imageServer) {
	t.Helper()
	must(t, w.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "images-ca"},
		Data: map[string]string{"ca.pem": string(s.caPEM)}}))
	must(t, w.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "images-creds"},
		Data: map[string][]byte{"accessKeyId": []byte(imageUser), "secretKey": []byte(imagePass)}}))
}

func httpSpec(s *imageServer, name, size string) cdiv1.DataVolumeSpec {
	return cdiv1.DataVolumeSpec{
		Source: &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: s.url + "/" + name,
			CertConfigMap: "images-ca", SecretRef: "images-creds", ExtraHeaders: []string{imageHeader + ": eu"}}},
		Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

func (w *world) waitDV(ctx context.Context, t *testing.T, key client.ObjectKey, what string, ok func(*cdiv1.DataVolume) bool) *cdiv1.DataVolume {
	t.Helper()
	dv := &cdiv1.DataVolume{}
	eventually(ctx, t, "DataVolume "+key.String()+" "+what, func() (bool, string) {
		if err := w.c.Get(ctx, key, dv); err != nil {
			return false, err.Error()
		}
		return ok(dv), fmt.Sprintf("phase %s progress %s restarts %d conditions %+v", dv.Status.Phase, dv.Status.Progress, dv.Status.RestartCount, dv.Status.Conditions)
	})
	return dv
}

func dvCondition(dv *cdiv1.DataVolume, t cdiv1.DataVolumeConditionType) cdiv1.DataVolumeCondition {
	for _, c := range dv.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return cdiv1.DataVolumeCondition{}
}

// TestDataVolumeImport is the import proof: a real HTTPS server (its own
// CA, basic auth, a required header) serves the test guest's disk as
// qcow2, and data disks carrying markers as raw.gz and raw.xz. A VM whose
// root disk is a dataVolumeTemplate importing the qcow2, with the two data
// DataVolumes and a blank one, goes Provisioning, then Running once all
// have Succeeded: it boots from the imported disk and the guest reads both
// markers and finds the blank disk empty. A slowly served image shows its
// progress on its DataVolume while it imports. Deleting the VM deletes its
// template's DataVolume and claim; deleting the others leaves nothing.
func TestDataVolumeImport(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s := guestImageServer(t)
	s.put("seven.raw.gz", gzipOf(t, markedDisk(7, 8<<20)))
	s.put("eleven.raw.xz", xzOf(t, markedDisk(11, 8<<20)))
	s.put("slow/disk.raw", markedDisk(3, 8<<20))
	const ns = "default"
	w.importSecrets(ctx, t, ns, s)

	for name, spec := range map[string]cdiv1.DataVolumeSpec{
		"seven":  httpSpec(s, "seven.raw.gz", "16Mi"),
		"eleven": httpSpec(s, "eleven.raw.xz", "16Mi"),
		"slow":   httpSpec(s, "slow/disk.raw", "16Mi"),
		"blank": {Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}},
	} {
		must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}))
	}

	// The importer's progress, read by the controller from the importer
	// pod over the pod network, shows on the DataVolume while it runs.
	var progress []string
	slow := w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "slow"}, "Succeeded, its progress seen", func(dv *cdiv1.DataVolume) bool {
		if p := string(dv.Status.Progress); p != "" && p != "N/A" && (len(progress) == 0 || progress[len(progress)-1] != p) {
			progress = append(progress, p)
		}
		return dv.Status.Phase == cdiv1.Succeeded
	})
	between := false
	for _, p := range progress {
		between = between || (p != "100.0%" && p != "0.00%")
	}
	if !between || slow.Status.Progress != "100.0%" {
		t.Errorf("progress seen %q, final %q: want a value between 0 and 100, then 100.0%%", progress, slow.Status.Progress)
	}
	t.Logf("the slow import's progress: %q", progress)

	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "imported"
	sp := &vm.Spec.Template.Spec
	vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "imported-root"},
		Spec: httpSpec(s, "guest.qcow2", "64Mi")}}
	for i := range sp.Volumes {
		if sp.Volumes[i].ContainerDisk != nil {
			sp.Volumes[i].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "imported-root"}}
		}
	}
	// vda is the root, vdb cloud-init's; then vdc, vdd, vde.
	for _, n := range []string{"seven", "eleven", "blank"} {
		sp.Domain.Devices.Disks = append(sp.Domain.Devices.Disks, virtv1.Disk{Name: n, DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
		sp.Volumes = append(sp.Volumes, virtv1.Volume{Name: n, VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: n}}})
	}
	must(t, w.c.Create(ctx, vm))

	// Provisioning while the DataVolumes fill; the VMI only after.
	seen := map[virtv1.VirtualMachinePrintableStatus]bool{}
	testenv.EventuallyEvery(ctx, t, 50*time.Millisecond, "VM imported Running", func() (bool, string) {
		got := &virtv1.VirtualMachine{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), got); err != nil {
			return false, err.Error()
		}
		seen[got.Status.PrintableStatus] = true
		return got.Status.PrintableStatus == virtv1.VirtualMachineStatusRunning, string(got.Status.PrintableStatus)
	})
	if !seen[virtv1.VirtualMachineStatusProvisioning] {
		t.Errorf("printable statuses seen %v: no Provisioning", seen)
	}
	var dvs cdiv1.DataVolumeList
	must(t, w.c.List(ctx, &dvs, client.InNamespace(ns)))
	for _, dv := range dvs.Items {
		if dv.Status.Phase != cdiv1.Succeeded || dv.Status.Progress != "100.0%" {
			t.Errorf("DataVolume %s: phase %s progress %s when the VM runs", dv.Name, dv.Status.Phase, dv.Status.Progress)
		}
	}
	vmi := w.waitRunning(ctx, t, vm)
	log := w.serialLog(ctx, t, vmi)
	waitFile(ctx, t, log, "hello from imported")
	waitFile(ctx, t, log, "VIRTKIT-DISK vdc previous=7 wrote=8 readback=ok")
	waitFile(ctx, t, log, "VIRTKIT-DISK vdd previous=11 wrote=12 readback=ok")
	waitFile(ctx, t, log, "VIRTKIT-DISK vde previous=none wrote=1 readback=ok")

	// No importer pod outlives its import.
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"cdi.kubevirt.io": "importer"}))
	if len(pods.Items) != 0 {
		t.Errorf("%d importer pods left after the imports", len(pods.Items))
	}
	// The qcow2 was converted from a scratch claim, asked for by its first
	// importer pod, gone with the second; the raw images streamed.
	root := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "imported-root"}, root))
	seven := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seven"}, seven))
	const requiresScratch = "cdi.kubevirt.io/storage.import.requiresScratch" // CDI's
	if root.Annotations[requiresScratch] != "true" || seven.Annotations[requiresScratch] != "" {
		t.Errorf("requiresScratch: qcow2 %q, raw.gz %q; want true and none", root.Annotations[requiresScratch], seven.Annotations[requiresScratch])
	}
	eventually(ctx, t, "no scratch claim left", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "imported-root-scratch"}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	for _, n := range []string{"seven", "eleven", "blank", "slow"} {
		must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}))
	}
	w.waitNothingLeft(ctx, t, ns)
}

// waitNothingLeft waits until ns has no DataVolume, claim, importer or
// upload pod, upload Secret, volume or claim folder.
func (w *world) waitNothingLeft(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	eventually(ctx, t, "no DataVolume, claim, importer pod, volume or folder left", func() (bool, string) {
		var dvs cdiv1.DataVolumeList
		var pvcs corev1.PersistentVolumeClaimList
		var pvs corev1.PersistentVolumeList
		var pods corev1.PodList
		var secrets corev1.SecretList
		must(t, w.c.List(ctx, &dvs, client.InNamespace(ns)))
		must(t, w.c.List(ctx, &pvcs, client.InNamespace(ns)))
		must(t, w.c.List(ctx, &pvs))
		must(t, w.c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{"cdi.kubevirt.io"}))
		must(t, w.c.List(ctx, &secrets, client.InNamespace(ns), client.HasLabels{"cdi.kubevirt.io"}))
		folders, _ := os.ReadDir(filepath.Join(w.data, "csi", "volumes"))
		return len(dvs.Items)+len(pvcs.Items)+len(pvs.Items)+len(pods.Items)+len(secrets.Items)+len(folders) == 0,
			fmt.Sprintf("%d DataVolumes, %d claims, %d volumes, %d importer or upload pods, %d upload secrets, %d folders",
				len(dvs.Items), len(pvcs.Items), len(pvs.Items), len(pods.Items), len(secrets.Items), len(folders))
	})
}

// TestDataVolumeBadInput: a source no importer could read is refused at
// the API with the field named; an unreachable URL is retried, its condition and
// events naming the URL; a corrupt file, an image larger than its claim,
// an unknown format, a registry tag that does not exist and a registry
// image with no disk each end Failed with the reason and the source in the
// condition, with no importer pod and no disk left in the claim; deleting
// them all leaves nothing.
func TestDataVolumeBadInput(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startImageServer(t)
	s.put("corrupt.raw.gz", append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, bytes.Repeat([]byte("not deflate"), 1000)...))
	s.put("big.raw", markedDisk(1, 40<<20))
	qed := make([]byte, 1<<20)
	copy(qed, "QED\x00")
	s.put("disk.qed", qed)
	const ns = "default"
	w.importSecrets(ctx, t, ns, s)

	// What no importer could read is refused at the API, the field named.
	ftp := httpSpec(s, "x", "16Mi")
	ftp.Source.HTTP.URL = "ftp://" + hostAddress(t).String() + "/disk.img"
	err := w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ftp"}, Spec: ftp})
	if err == nil || !strings.Contains(err.Error(), "spec.source.http.url") {
		t.Errorf("creating a DataVolume of an ftp URL: %v, want a refusal naming spec.source.http.url", err)
	}

	// A port nothing listens on.
	l, err := net.Listen("tcp", net.JoinHostPort(hostAddress(t).String(), "0"))
	must(t, err)
	closed := "https://" + l.Addr().String() + "/gone.qcow2"
	must(t, l.Close())
	unreachable := httpSpec(s, "x", "16Mi")
	unreachable.Source.HTTP.URL = closed
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unreachable"}, Spec: unreachable}))
	// Registry images the importer pulls itself: a tag the registry does
	// not have, and an image with no disk.
	registrySpec := func(ref string) cdiv1.DataVolumeSpec {
		spec := httpSpec(s, "x", "16Mi")
		spec.Source = &cdiv1.DataVolumeSource{Registry: &cdiv1.DataVolumeSourceRegistry{URL: ptrTo("docker://" + ref),
			SecretRef: ptrTo("images-creds"), CertConfigMap: ptrTo("images-ca")}}
		return spec
	}
	app, err := random.Image(4096, 1)
	must(t, err)
	noDisk := s.push(t, app, "virtkit/app:v1")
	noTag := strings.TrimSuffix(noDisk, ":v1") + ":v2"
	for name, spec := range map[string]cdiv1.DataVolumeSpec{
		"corrupt":         httpSpec(s, "corrupt.raw.gz", "16Mi"),
		"toobig":          httpSpec(s, "big.raw", "16Mi"),
		"qed":             httpSpec(s, "disk.qed", "16Mi"),
		"registry-no-tag": registrySpec(noTag),
		"registry-app":    registrySpec(noDisk),
	} {
		must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}))
	}

	for name, want := range map[string]struct{ reason, source string }{
		"corrupt": {"Corrupt", s.url}, "toobig": {"TooLarge", s.url}, "qed": {"UnsupportedFormat", s.url},
		"registry-no-tag": {"SourceRefused", "docker://" + noTag}, "registry-app": {"UnsupportedFormat", "docker://" + noDisk},
	} {
		key := client.ObjectKey{Namespace: ns, Name: name}
		dv := w.waitDV(ctx, t, key, "Failed", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Failed })
		c := dvCondition(dv, cdiv1.DataVolumeRunning)
		if c.Reason != want.reason || !strings.Contains(c.Message, want.source) {
			t.Errorf("DataVolume %s: Running condition %+v, want reason %s and %s named", name, c, want.reason, want.source)
		}
		t.Logf("DataVolume %s: %s: %s", name, c.Reason, c.Message)
		pvc := &corev1.PersistentVolumeClaim{}
		must(t, w.c.Get(ctx, key, pvc))
		if _, err := os.Lstat(w.claimDisk(ctx, t, pvc)); !os.IsNotExist(err) {
			t.Errorf("DataVolume %s: a disk.img is left in its claim (%v)", name, err)
		}
		// The controller writes Failed, then deletes the pod, which the
		// node then ends: gone soon after, not at the same instant.
		eventually(ctx, t, "DataVolume "+name+": its importer pod gone", func() (bool, string) {
			err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "importer-" + name}, &corev1.Pod{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}

	dv := w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "unreachable"}, "retrying", func(dv *cdiv1.DataVolume) bool {
		c := dvCondition(dv, cdiv1.DataVolumeRunning)
		return dv.Status.RestartCount >= 1 && c.Reason == "Error" && strings.Contains(c.Message, closed)
	})
	if dv.Status.Phase != cdiv1.ImportInProgress {
		t.Errorf("a retried import is %s, want ImportInProgress", dv.Status.Phase)
	}
	var events corev1.EventList
	must(t, w.c.List(ctx, &events, client.InNamespace(ns)))
	named := false
	for _, e := range events.Items {
		named = named || (e.InvolvedObject.Name == "unreachable" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, closed))
	}
	if !named {
		t.Error("no Warning event on the DataVolume names the unreachable URL")
	}

	for _, n := range []string{"unreachable", "corrupt", "toobig", "qed", "registry-no-tag", "registry-app"} {
		must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}))
	}
	w.waitNothingLeft(ctx, t, ns)
}

// vmWithDisks is the test guest's VM with root as its root disk and data
// as its one data disk (vdc), both DataVolumes.
func (w *world) vmWithDisks(t *testing.T, name, root, data string) *virtv1.VirtualMachine {
	t.Helper()
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = name
	sp := &vm.Spec.Template.Spec
	for i := range sp.Volumes {
		if sp.Volumes[i].ContainerDisk != nil {
			sp.Volumes[i].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: root}}
		}
	}
	sp.Domain.Devices.Disks = append(sp.Domain.Devices.Disks, virtv1.Disk{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	sp.Volumes = append(sp.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: data}}})
	return vm
}

func cloneSpec(from, size string) cdiv1.DataVolumeSpec {
	return cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: from}},
		Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

// TestDataVolumeRegistryAndClone: a DataVolume imports the test guest's
// containerDisk from a registry over HTTPS with its own CA and basic auth
// (the importer pulls it, CDI's default) and a VM boots from it, writing a
// marker on a blank data disk. The same image pulled by the node from
// virt-local's registry (pullMethod node) gives the same disk. A clone of that data disk waits while the VM runs (the source is
// in use), and proceeds once it is stopped: virt-local's driver clones it
// (csi-clone); a class annotated for snapshot clones clones it through a
// VolumeSnapshot, and a user's VolumeSnapshot of it restores into a third
// DataVolume; all three disks equal the source's. A DataSource names the imported
// disk as a golden image: a second VM, whose root disk is a
// dataVolumeTemplate cloning it by sourceRef, with the data disk's clone,
// boots and reads the first one's marker; deleting it deletes its
// DataVolume.
func TestDataVolumeRegistryAndClone(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const ns = "default"
	s := startImageServer(t)
	w.importSecrets(ctx, t, ns, s)
	image := s.pushImage(t, w, "virtkit/test-guest:latest")
	registry := cdiv1.DataVolumeSpec{
		Source: &cdiv1.DataVolumeSource{Registry: &cdiv1.DataVolumeSourceRegistry{URL: ptrTo("docker://" + image),
			SecretRef: ptrTo("images-creds"), CertConfigMap: ptrTo("images-ca")}},
		Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}},
	}
	byNode := *registry.DeepCopy()
	byNode.Source.Registry = &cdiv1.DataVolumeSourceRegistry{URL: ptrTo("docker://" + w.localImage("virtkit/test-guest:latest")), PullMethod: ptrTo(cdiv1.RegistryPullNode)}
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "golden-by-node"}, Spec: byNode}))
	blank := cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
		Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "golden"}, Spec: registry}))
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch"}, Spec: blank}))
	writer := w.vmWithDisks(t, "writer", "golden", "scratch")
	must(t, w.c.Create(ctx, writer))
	first := w.waitRunning(ctx, t, writer)
	firstLog := w.serialLog(ctx, t, first)
	waitFile(ctx, t, firstLog, "hello from writer")
	waitFile(ctx, t, firstLog, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	golden := w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "golden"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(golden), pvc))
	if got := pvc.Annotations["cdi.kubevirt.io/storage.import.source"]; got != "registry" {
		t.Errorf("the registry import's claim: source annotation %q", got)
	}
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "golden-by-node"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	if a, b := w.claimBytes(ctx, t, ns, "golden"), w.claimBytes(ctx, t, ns, "golden-by-node"); len(a) < 1<<20 || !bytes.Equal(a, b) {
		t.Errorf("the image pulled by the node (%d bytes) differs from the one the importer pulled (%d bytes)", len(b), len(a))
	}

	// The clone of a disk in use waits for the guest to stop.
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch-copy"}, Spec: cloneSpec("scratch", "16Mi")}))
	// The imported disk as a golden image, named by a DataSource.
	must(t, w.c.Create(ctx, &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-guest"},
		Spec: cdiv1.DataSourceSpec{Source: cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: "golden"}}}}))
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-copy"}, "waiting for its source", func(dv *cdiv1.DataVolume) bool {
		c := dvCondition(dv, cdiv1.DataVolumeRunning)
		return dv.Status.Phase == cdiv1.Pending && c.Reason == "CloneSourceInUse" && strings.Contains(c.Message, "scratch")
	})
	w.virtctl(ctx, t, "stop", writer.Name, "-n", ns)
	w.waitNoVMI(ctx, t, writer)
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-copy"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	// virt-local's driver clones (its StorageProfile says csi-clone): the
	// claim names its source, and no pod copied the disk.
	w.checkSmartClone(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-copy"}, "csi-clone", "PersistentVolumeClaim")
	// A class of the same driver whose claims clone through a snapshot.
	snappy := w.cloneClass(ctx, t, "local-snapshot-clones", cdiv1.CloneStrategySnapshot)
	bySnapshot := cloneSpec("scratch", "16Mi")
	bySnapshot.Storage.StorageClassName = &snappy
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch-snap"}, Spec: bySnapshot}))
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-snap"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	w.checkSmartClone(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-snap"}, "snapshot", "VolumeSnapshot")
	// A user's VolumeSnapshot as a DataVolume's source: restored by the
	// driver, and kept.
	userSnap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch-at-rest"},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptrTo("scratch")}}}
	must(t, w.c.Create(ctx, userSnap))
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch-restored"},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: userSnap.Name}},
			Storage: &cdiv1.StorageSpec{}}}))
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-restored"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	w.checkSmartClone(ctx, t, client.ObjectKey{Namespace: ns, Name: "scratch-restored"}, "snapshot", "VolumeSnapshot")
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(userSnap), userSnap))
	scratch := w.claimBytes(ctx, t, ns, "scratch")
	for _, n := range []string{"scratch-copy", "scratch-snap", "scratch-restored"} {
		if b := w.claimBytes(ctx, t, ns, n); len(scratch) == 0 || !bytes.Equal(b, scratch) {
			t.Errorf("clone %s's disk (%d bytes) differs from its source's (%d bytes)", n, len(b), len(scratch))
		}
	}
	eventually(ctx, t, "DataSource test-guest Ready", func() (bool, string) {
		ds := &cdiv1.DataSource{}
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-guest"}, ds))
		for _, c := range ds.Status.Conditions {
			if c.Type == cdiv1.DataSourceReady {
				return c.Status == corev1.ConditionTrue, c.Message
			}
		}
		return false, "no Ready condition"
	})

	// Its root disk a dataVolumeTemplate cloning the DataSource's claim.
	reader := w.vmWithDisks(t, "reader", "reader-root", "scratch-copy")
	reader.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "reader-root"},
		Spec: cdiv1.DataVolumeSpec{SourceRef: &cdiv1.DataVolumeSourceRef{Kind: "DataSource", Name: "test-guest"},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}}}
	must(t, w.c.Create(ctx, reader))
	second := w.waitRunning(ctx, t, reader)
	secondLog := w.serialLog(ctx, t, second)
	waitFile(ctx, t, secondLog, "hello from reader")
	waitFile(ctx, t, secondLog, "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")

	must(t, w.c.Delete(ctx, reader))
	must(t, w.c.Delete(ctx, writer))
	w.waitNoVMI(ctx, t, reader)
	eventually(ctx, t, "the VM's DataVolume gone with it", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reader-root"}, &cdiv1.DataVolume{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	must(t, w.c.Delete(ctx, &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-guest"}}))
	must(t, w.c.Delete(ctx, userSnap))
	for _, n := range []string{"golden", "golden-by-node", "scratch", "scratch-copy", "scratch-snap", "scratch-restored"} {
		must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}))
	}
	w.waitNothingLeft(ctx, t, ns)
}

func ptrTo[T any](v T) *T { return &v }

// cloneClass makes a StorageClass name of virt-local's driver whose
// StorageProfile says strategy (through the class's annotation), waits for
// the profile to say it, and deletes the class when the test ends.
func (w *world) cloneClass(ctx context.Context, t *testing.T, name string, strategy cdiv1.CDICloneStrategy) string {
	t.Helper()
	sc := csidriver.StorageClass(name, false)
	sc.Annotations = map[string]string{storageprofile.AnnCloneStrategy: map[cdiv1.CDICloneStrategy]string{
		cdiv1.CloneStrategyHostAssisted: "copy", cdiv1.CloneStrategySnapshot: "snapshot", cdiv1.CloneStrategyCsiClone: "csi-clone"}[strategy]}
	must(t, w.c.Create(ctx, sc))
	t.Cleanup(func() { must(t, client.IgnoreNotFound(w.c.Delete(context.Background(), sc))) })
	eventually(ctx, t, "StorageProfile "+name+" says "+string(strategy), func() (bool, string) {
		sp := &cdiv1.StorageProfile{}
		err := w.c.Get(ctx, client.ObjectKey{Name: name}, sp)
		return err == nil && ptr.Deref(sp.Status.CloneStrategy, "") == strategy, fmt.Sprintf("%+v %v", sp.Status, err)
	})
	return name
}

// checkSmartClone checks that the storage made the claim of the clone key
// (strategy, from a data source of kind; "" kind: a volume handed over from
// another namespace), that no pod copied it, and that no snapshot of it is
// left once the snapshot controller has let the deleted one go.
func (w *world) checkSmartClone(ctx context.Context, t *testing.T, key client.ObjectKey, strategy, kind string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, key, pvc))
	ds := pvc.Spec.DataSource
	made := ds != nil && ds.Kind == kind
	if kind == "" {
		made = ds == nil && pvc.Spec.VolumeName != ""
	}
	if !made || pvc.Annotations["cdi.kubevirt.io/cloneType"] != strategy {
		t.Errorf("clone %s: claim's data source %+v, volume %q, annotations %v; want a %s from a %q", key, ds, pvc.Spec.VolumeName, pvc.Annotations, strategy, kind)
	}
	var events corev1.EventList
	must(t, w.c.List(ctx, &events, client.InNamespace(key.Namespace)))
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Pod" && strings.HasSuffix(e.InvolvedObject.Name, "-"+key.Name) {
			t.Errorf("clone %s: pod %s ran (%s: %s)", key, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	// The controller deletes its snapshot once the claim is bound; the
	// snapshot controller then lets it go, a moment after the DataVolume
	// may have said Succeeded.
	eventually(ctx, t, "clone "+key.String()+": no snapshot of it left", func() (bool, string) {
		var snaps volumesnapshotv1.VolumeSnapshotList
		if err := w.c.List(ctx, &snaps, client.InNamespace(key.Namespace)); err != nil {
			return false, err.Error()
		}
		var left []string
		for _, s := range snaps.Items {
			if strings.HasPrefix(s.Name, "tmp-snapshot-") {
				left = append(left, fmt.Sprintf("%s (deleted: %v)", s.Name, s.DeletionTimestamp != nil))
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
}
