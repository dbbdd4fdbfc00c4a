package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	uploadv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/upload/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/local/cluster"
)

// TestDataVolumeArchive: CDI's archive content type on virt-local. A
// DataVolume imports a gzip-compressed tar over HTTPS, `virtctl
// image-upload --archive-path` uploads a plain one, and a browser-style
// multipart form posted to the proxy's upload-form-async path a third:
// the claims' file systems hold the archives' files, folders, modes and
// links, and no disk image. Deleting them leaves nothing.
func TestDataVolumeArchive(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "default"
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range []tar.Header{
		{Name: "conf/", Typeflag: tar.TypeDir, Mode: 0o750},
		{Name: "conf/app.conf", Typeflag: tar.TypeReg, Mode: 0o640, Size: int64(len("key=value\n"))},
		{Name: "bin/run.sh", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len("#!/bin/sh\n"))},
		{Name: "current", Typeflag: tar.TypeSymlink, Linkname: "conf/app.conf", Mode: 0o777},
	} {
		must(t, tw.WriteHeader(&m))
		switch m.Name {
		case "conf/app.conf":
			_, err := tw.Write([]byte("key=value\n"))
			must(t, err)
		case "bin/run.sh":
			_, err := tw.Write([]byte("#!/bin/sh\n"))
			must(t, err)
		}
	}
	must(t, tw.Close())
	s := startImageServer(t)
	s.put("files.tar.gz", gzipOf(t, b.Bytes()))
	w.importSecrets(ctx, t, ns, s)
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"}, Spec: httpSpec(s, "files.tar.gz", "16Mi")}
	dv.Spec.ContentType = cdiv1.DataVolumeArchive
	must(t, w.c.Create(ctx, dv))
	w.waitDV(ctx, t, client.ObjectKeyFromObject(dv), "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })

	image := filepath.Join(t.TempDir(), "files.tar")
	must(t, os.WriteFile(image, b.Bytes(), 0o600))
	out, err := w.tryVirtctl(ctx, t, "image-upload", "dv", "uploaded-files", "--archive-path", image, "--size", "16Mi", "--insecure",
		"--uploadproxy-url", "https://127.0.0.1:"+strconv.Itoa(w.cfg.VirtAPIPort), "-n", ns)
	if err != nil || !strings.Contains(out, "completed successfully") {
		t.Fatalf("uploading an archive: %v", err)
	}

	// A form upload, with a token from the upload API, as a browser sends it.
	form := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "form-files"},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Upload: &cdiv1.DataVolumeSourceUpload{}}, ContentType: cdiv1.DataVolumeArchive,
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}}
	must(t, w.c.Create(ctx, form))
	w.waitDV(ctx, t, client.ObjectKeyFromObject(form), "UploadReady", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.UploadReady })
	tok := &uploadv1beta1.UploadTokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "form-token"},
		Spec: uploadv1beta1.UploadTokenRequestSpec{PvcName: form.Name}}
	must(t, w.c.Create(ctx, tok))
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	must(t, mw.WriteField("note", "skipped"))
	fw, err := mw.CreateFormFile("file", "files.tar")
	must(t, err)
	_, err = fw.Write(b.Bytes())
	must(t, err)
	must(t, mw.Close())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://127.0.0.1:"+strconv.Itoa(w.cfg.VirtAPIPort)+"/v1beta1/upload-form-async", &body)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // virt-local's own proxy
	resp, err := hc.Do(req)
	must(t, err)
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("form upload: %d %s", resp.StatusCode, reply)
	}
	w.waitDV(ctx, t, client.ObjectKeyFromObject(form), "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })

	for _, name := range []string{"files", "uploaded-files", form.Name} {
		pvc := &corev1.PersistentVolumeClaim{}
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc))
		if pvc.Annotations["cdi.kubevirt.io/storage.contentType"] != "archive" {
			t.Errorf("claim %s annotations %v: want content type archive", name, pvc.Annotations)
		}
		dir, err := cluster.ClaimFolder(ctx, w.c, w.data, pvc)
		must(t, err)
		conf, err := os.ReadFile(filepath.Join(dir, "conf", "app.conf"))
		if err != nil || string(conf) != "key=value\n" {
			t.Errorf("%s: conf/app.conf %q (%v), want key=value", name, conf, err)
		}
		for file, mode := range map[string]os.FileMode{"conf": 0o750 | os.ModeDir, "conf/app.conf": 0o640, "bin/run.sh": 0o755} {
			if fi, err := os.Lstat(filepath.Join(dir, file)); err != nil || fi.Mode() != mode {
				t.Errorf("%s: %s: %v (%v), want mode %v", name, file, fi, err, mode)
			}
		}
		if target, err := os.Readlink(filepath.Join(dir, "current")); err != nil || target != "conf/app.conf" {
			t.Errorf("%s: link current -> %q (%v), want conf/app.conf", name, target, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "disk.img")); !os.IsNotExist(err) {
			t.Errorf("%s: disk.img: %v, want none", name, err)
		}
	}
	for _, name := range []string{"files", "uploaded-files", form.Name} {
		must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	w.waitNothingLeft(ctx, t, ns)
}
