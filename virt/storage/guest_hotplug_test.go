package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

// watchDisks is user-data that reports block devices as they come and go,
// and holds each hotplugged disk open (a disk in use) once its device node
// appears.
const watchDisks = `#!/bin/sh
(
seen=" "
while :; do
	for s in /sys/block/vd* /sys/block/sd*; do
		[ -e "$s" ] || continue
		d=${s##*/}
		case "$seen" in *" $d "*) continue ;; esac
		seen="$seen$d "
		echo "HOTPLUG-ADDED $d sectors=$(cat $s/size)"
		if [ "$d" != vda ]; then
			[ -e "/dev/$d" ] || mknod "/dev/$d" b $(sed 's/:/ /' "$s/dev")
			( exec 3<"/dev/$d" && echo "HOTPLUG-HOLD $d" && exec sleep 600 ) &
		fi
	done
	for d in $seen; do
		[ -e "/sys/block/$d" ] && continue
		seen=$(echo "$seen" | sed "s/ $d / /")
		echo "HOTPLUG-REMOVED $d"
	done
	sleep 1
done
) &
`

func hotVMI() *virtv1.VirtualMachineInstance {
	hot := func(name string) virtv1.Volume {
		return vol(name, virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-claim"}, Hotpluggable: true}})
	}
	return vmiWith(
		vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: watchDisks}}),
		hot("hot"), hot("hotscsi"))
}

// A claim hotplugged into the running guest (virtio, then SCSI) is seen
// by the guest and removed again, also while the guest holds it open; the
// guest keeps running throughout.
func TestGuestHotplug(t *testing.T) {
	e := newGuestEnv(t)
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{
		"hot":     {Path: filepath.Join(e.dir, "claims", "hot"), CapacityBytes: 64 << 20},
		"hotscsi": {Path: filepath.Join(e.dir, "claims", "hotscsi"), CapacityBytes: 32 << 20},
	}}
	mkdir(t, pod.Volumes["hot"].Path)
	mkdir(t, pod.Volumes["hotscsi"].Path)
	plan := e.plan(hotVMI(), pod)
	for _, v := range []string{"hot", "hotscsi"} {
		if !plan[v].Hotpluggable {
			t.Fatalf("%s is not planned as hotpluggable: %+v", v, plan[v])
		}
	}

	const name = "storage-hotplug"
	console := e.bootWith(name, func(d *libvirtxml.Domain) {
		d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "scsi", Model: "virtio-scsi"})
		// Free PCIe ports for virtio hotplug, as KubeVirt adds them.
		for i := range uint(3) {
			index := 20 + i
			d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "pci", Model: "pcie-root-port", Index: &index})
		}
	}, diskOf(plan["ci"], "vda"))
	e.wait(console, `^VIRTKIT-USERDATA-DONE rc=0$`, `^HOTPLUG-ADDED vda `, `^VIRTKIT-READY$`)

	var mu sync.Mutex
	var phases []virtv1.VolumePhase
	hp := hotplug.New(e.m, hotplug.WithStatus(func(s virtv1.VolumeStatus) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, s.Phase)
	}), hotplug.WithDetachTimeout(20*time.Second))

	for _, tc := range []struct {
		vol string
		bus virtv1.DiskBus
		dev string
	}{{"hot", virtv1.DiskBusVirtio, "vdb"}, {"hotscsi", virtv1.DiskBusSCSI, "sda"}} {
		mu.Lock()
		phases = nil
		mu.Unlock()
		p := plan[tc.vol]
		st, err := hp.Attach(e.ctx, name, hotplug.Disk{Plan: p, Bus: tc.bus})
		if err != nil {
			t.Fatalf("attach %s: %v", tc.vol, err)
		}
		if st.Phase != virtv1.VolumeReady || st.Target != tc.dev {
			t.Errorf("attach %s: status %+v, want Ready on %s", tc.vol, st, tc.dev)
		}
		sectors := strconv.FormatInt(p.CapacityBytes/512, 10)
		e.wait(console, `^HOTPLUG-ADDED `+tc.dev+` sectors=`+sectors+`$`)
		// The guest holds the disk open before it is removed.
		e.wait(console, `^HOTPLUG-HOLD `+tc.dev+`$`)
		if _, err := hp.Attach(e.ctx, name, hotplug.Disk{Plan: p, Bus: tc.bus}); !errors.Is(err, domain.ErrAlreadyExists) {
			t.Errorf("attaching %s twice: %v", tc.vol, err)
		}

		err = hp.Detach(e.ctx, name, p)
		switch {
		case err == nil:
			e.wait(console, `^HOTPLUG-REMOVED `+tc.dev+`$`)
			if err := hp.Detach(e.ctx, name, p); !errors.Is(err, hotplug.ErrNotAttached) {
				t.Errorf("detaching %s twice: %v", tc.vol, err)
			}
		case errors.Is(err, hotplug.ErrDetachPending):
			t.Logf("detach of %s in use is pending: %v", tc.vol, err)
		default:
			t.Fatalf("detach %s: %v", tc.vol, err)
		}
		mu.Lock()
		got := slices.Clone(phases)
		mu.Unlock()
		want := []virtv1.VolumePhase{virtv1.HotplugVolumeMounted, virtv1.VolumeReady, virtv1.HotplugVolumeMounted, virtv1.HotplugVolumeDetaching}
		if !slices.Equal(got[:min(len(got), len(want))], want) {
			t.Errorf("%s: phases %v, want %v first", tc.vol, got, want)
		}
		if s, _, err := e.m.State(e.ctx, name); err != nil || s != domain.StateRunning {
			t.Fatalf("after unplugging %s the domain is %v (%v)", tc.vol, s, err)
		}
	}
	// Still alive: the heartbeat goes on.
	log, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	beats := regexp.MustCompile(`(?m)^VIRTKIT-HEARTBEAT (\d+)\r?$`).FindAllSubmatch(log, -1)
	if len(beats) == 0 {
		t.Fatal("no heartbeat on the console")
	}
	n, _ := strconv.Atoi(string(beats[len(beats)-1][1]))
	e.wait(console, `^VIRTKIT-HEARTBEAT `+strconv.Itoa(n+2)+`$`)
	e.powerOff(name)
}
