package e2e

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/internal/testguest"
)

// KubeVirt's declarative CD-ROM hotplug end to end: a VM boots with an
// empty CD-ROM drive (a disk without a volume); a hotpluggable claim added
// to its template under the drive's name is inserted as media (through its
// attachment pod, as any hotplugged volume) and the guest reads it; taken
// out of the template, it is ejected and the drive stays, empty. No
// restart is asked for.
func TestCDROMInsertEject(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	pvc := w.rwoClaim(ctx, t, "cd-media")
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "cd"
	disks := &vm.Spec.Template.Spec.Domain.Devices.Disks
	// SCSI: the test guest's kernel has no AHCI driver for a SATA drive.
	*disks = append(*disks, virtv1.Disk{Name: "media", DiskDevice: virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusSCSI}}})
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	serial := w.serialLog(ctx, t, vmi)
	waitFile(ctx, t, serial, testguest.ReadyMarker)
	waitFile(ctx, t, serial, "VIRTKIT-CDROM sr0 media=none")

	// What the guest last said of its drive: "media=none" or "sectors=N".
	cdLine := regexp.MustCompile(`(?m)^VIRTKIT-CDROM sr0 (\S+)\r?$`)
	media := func(what string, ok func(said string) bool) {
		t.Helper()
		eventually(ctx, t, "the guest's CD-ROM drive "+what, func() (bool, string) {
			b, err := os.ReadFile(serial)
			if err != nil {
				return false, err.Error()
			}
			all := cdLine.FindAllStringSubmatch(string(b), -1)
			if len(all) == 0 {
				return false, "no CD-ROM line"
			}
			last := all[len(all)-1][1]
			return ok(last), last
		})
	}
	setMedia := func(in bool) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
				return err
			}
			vols := &vm.Spec.Template.Spec.Volumes
			*vols = slices.DeleteFunc(*vols, func(v virtv1.Volume) bool { return v.Name == "media" })
			if in {
				*vols = append(*vols, virtv1.Volume{Name: "media", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					Hotpluggable: true, PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}})
			}
			return w.c.Update(ctx, vm)
		}))
	}

	setMedia(true)
	st := w.waitVolume(ctx, t, vmi, "media", virtv1.VolumeReady)
	if st.Target == "" || st.HotplugVolume == nil || st.HotplugVolume.AttachPodName == "" {
		t.Errorf("volume status %+v: want a target and the attachment pod named", st)
	}
	media("holding the claim's image", func(s string) bool { return strings.HasPrefix(s, "sectors=") && s != "sectors=0" })
	noRestart := func(when string) {
		t.Helper()
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		if c := conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineRestartRequired); c != nil {
			t.Errorf("%s asks for a restart: %+v", when, c)
		}
	}
	noRestart("inserting media")

	setMedia(false)
	media("empty again", func(s string) bool { return s == "media=none" })
	w.waitNoHotplug(ctx, t, vmi)
	cur := w.vmiOf(ctx, t, vm)
	if !slices.ContainsFunc(cur.Spec.Domain.Devices.Disks, func(d virtv1.Disk) bool { return d.Name == "media" && d.CDRom != nil }) {
		t.Errorf("the ejected drive left the VMI's disks: %+v", cur.Spec.Domain.Devices.Disks)
	}
	if cur.UID != vmi.UID {
		t.Errorf("the VMI was replaced (%s, was %s): the change was not live", cur.UID, vmi.UID)
	}
	noRestart("ejecting media")
	w.deleteVM(ctx, t, vm)
}
