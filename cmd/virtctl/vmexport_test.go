package main

import (
	"strings"
	"testing"

	exportv1 "kubevirt.io/api/export/v1beta1"
)

// Bad command lines are refused before anything is read or written.
func TestVMExportUsageErrors(t *testing.T) {
	for _, c := range []struct{ args, stderr string }{
		{"vmexport copy e --pvc=d", `invalid function "copy": create, delete or download`},
		{"vmexport create e", "create needs a source: --vm, --snapshot or --pvc"},
		{"vmexport create e --vm=a --pvc=b", "--vm, --snapshot and --pvc: name one source only"},
		{"vmexport create e --pvc=b --output=x", "--output, --volume, --format, --manifest, --service-url and --port-forward are download's flags"},
		{"vmexport create e --pvc=b --labels=nokey", `--labels "nokey": want key=value`},
		{"vmexport delete e --vm=a", "delete takes no source flag"},
		{"vmexport download e --pvc=b", "--output is required"},
		{"vmexport download e --output=x --format=qcow2", `--format "qcow2": gzip or raw`},
		{"vmexport download e --output=x --keep-vme --delete-vme", "--keep-vme and --delete-vme: one at most"},
		{"vmexport download e --manifest --pvc=b", "--manifest does not apply to a claim's export"},
		{"vmexport download e --output=x --port-forward --service-url=h:1", "--port-forward and --service-url: one at most"},
	} {
		t.Run(c.args, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code == 0 {
				t.Errorf("exit 0, want an error")
			}
			if !strings.Contains(h.stderr.String(), c.stderr) {
				t.Errorf("stderr %q\nwant it to say %q", h.stderr, c.stderr)
			}
		})
	}
}

// The link a download takes, as KubeVirt's virtctl picks it: gzip before
// raw, the only volume unless --volume names one.
func TestVolumeURL(t *testing.T) {
	link := &exportv1.VirtualMachineExportLink{Volumes: []exportv1.VirtualMachineExportVolume{
		{Name: "a", Formats: []exportv1.VirtualMachineExportVolumeFormat{{Format: exportv1.KubeVirtRaw, Url: "https://h/a/raw"}, {Format: exportv1.KubeVirtGz, Url: "https://h/a/gz"}}},
		{Name: "b", Formats: []exportv1.VirtualMachineExportVolumeFormat{{Format: exportv1.KubeVirtRaw, Url: "https://h/b/raw"}}},
	}}
	if u, gz, err := volumeURL(link, "a"); err != nil || u != "https://h/a/gz" || !gz {
		t.Errorf("volume a: %s %v %v, want its gzip link", u, gz, err)
	}
	if u, gz, err := volumeURL(link, "b"); err != nil || u != "https://h/b/raw" || gz {
		t.Errorf("volume b: %s %v %v, want its raw link", u, gz, err)
	}
	if _, _, err := volumeURL(link, ""); err == nil || !strings.Contains(err.Error(), "name one with --volume") {
		t.Errorf("no --volume with two volumes: %v", err)
	}
	if _, _, err := volumeURL(link, "c"); err == nil {
		t.Error("an unknown volume: no error")
	}
	if u, err := serviceHost("https://virt-export-e.ns.svc/volumes/a/disk.img.gz", "127.0.0.1:9443"); err != nil || u != "https://127.0.0.1:9443/volumes/a/disk.img.gz" {
		t.Errorf("--service-url: %s %v", u, err)
	}
}

// linkHost is the host the internal links name (the Service's name, which
// the server's certificate holds), from a volume's link, else a manifest's.
func TestLinkHost(t *testing.T) {
	vol := func(u string) exportv1.VirtualMachineExportVolume {
		return exportv1.VirtualMachineExportVolume{Name: "d", Formats: []exportv1.VirtualMachineExportVolumeFormat{{Format: exportv1.KubeVirtRaw, Url: u}}}
	}
	for _, c := range []struct {
		link exportv1.VirtualMachineExportLink
		want string
	}{
		{exportv1.VirtualMachineExportLink{Volumes: []exportv1.VirtualMachineExportVolume{vol("https://virt-export-e.ns.svc/volumes/d/disk.img")}}, "virt-export-e.ns.svc"},
		{exportv1.VirtualMachineExportLink{Manifests: []exportv1.VirtualMachineExportManifest{{Type: exportv1.AllManifests, Url: "https://virt-export-e.ns.svc:443/internal/manifests/all"}}}, "virt-export-e.ns.svc"},
	} {
		if got, err := linkHost(&c.link); err != nil || got != c.want {
			t.Errorf("linkHost(%+v) = %q, %v; want %q", c.link, got, err, c.want)
		}
	}
	if _, err := linkHost(&exportv1.VirtualMachineExportLink{}); err == nil {
		t.Error("linkHost of links without a URL: no error")
	}
}
