package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources"
)

// acceptPersist adds --persist, which is accepted and has no effect, as
// in KubeVirt's virtctl.
func acceptPersist(fs *pflag.FlagSet) { fs.Bool("persist", false, persistUsage) }

const persistUsage = "Deprecated, has no effect: the change is made to the VM (which hotplugs it into its running VMI), or to the VMI when no VM owns it."

// toVMOrVMI makes a volume request of a VM, as KubeVirt's virtctl does: the
// VM's template changes and the VM controller hotplugs it into the running
// VMI; a VMI that no VM owns (the VM is not found) gets it itself.
func toVMOrVMI[T any](ctx context.Context, s *session, o *op, vm, vmi func(context.Context, string, string, T) error, opts T) error {
	err := vm(ctx, s.ns, o.name, opts)
	var se *subresources.StatusError
	if errors.As(err, &se) && se.Status.Code == http.StatusNotFound && se.Status.Details != nil && se.Status.Details.Kind == "virtualmachine" {
		o.kind = kindVMI
		err = vmi(ctx, s.ns, o.name, opts)
	}
	return err
}

func addVolumeCommand() command {
	return command{name: "addvolume", use: "addvolume (VM) --volume-name=PVC", short: "Hotplug a PersistentVolumeClaim into a running virtual machine.", args: 1,
		example: "  # Attach the claim 'data' to the running VM 'tiny' (and to its template, so that it stays after a restart):\n  virtctl addvolume tiny --volume-name=data\n" +
			"  # With a serial the guest sees:\n  virtctl addvolume tiny --volume-name=data --serial=DATA1",
		setup: func(fs *pflag.FlagSet) action {
			volume := fs.String("volume-name", "", "Name of the PersistentVolumeClaim to attach (required).")
			diskName := fs.String("disk-name", "", "Name of the disk and volume in the VM's spec; default --volume-name.")
			serial := fs.String("serial", "", "Serial number the guest sees for the disk; default the disk's name.")
			cache := fs.String("cache", "", "Disk cache mode: none, writethrough or writeback.")
			diskType := fs.String("disk-type", "disk", "Device type: disk or lun.")
			bus := fs.String("bus", string(virtv1.DiskBusSCSI), "Disk bus: scsi, or virtio for --disk-type=disk.")
			acceptPersist(fs)
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if *volume == "" {
					return &usageError{cmd: "addvolume", err: fmt.Errorf("--volume-name is required: the PersistentVolumeClaim to attach")}
				}
				opts, err := addVolumeOptions(*volume, *diskName, *serial, *cache, *diskType, *bus)
				if err != nil {
					return &usageError{cmd: "addvolume", err: err}
				}
				if err := s.connect(); err != nil {
					return err
				}
				o := op{"addvolume", kindVM, args[0]}
				if opts.VolumeSource, err = s.volumeSource(ctx, o, *volume); err != nil {
					return err
				}
				opts.DryRun = s.dryRun(*dry)
				if err := toVMOrVMI(ctx, s, &o, s.sub.AddVolume, s.sub.AddVMIVolume, opts); err != nil {
					return s.explain(o, err)
				}
				fmt.Fprintf(s.stdout, "Successfully submitted add volume request to VM %s for volume %s\n", args[0], *volume)
				return nil
			}
		}}
}

// addVolumeOptions checks the flags of addvolume as KubeVirt's virtctl does
// and returns the request without its volume source.
func addVolumeOptions(volume, diskName, serial, cache, diskType, bus string) (virtv1.AddVolumeOptions, error) {
	name := volume
	if diskName != "" {
		name = diskName
	}
	if len(name) > validation.DNS1035LabelMaxLength {
		return virtv1.AddVolumeOptions{}, fmt.Errorf("the disk name %q is longer than %d characters: give a shorter one with --disk-name", name, validation.DNS1035LabelMaxLength)
	}
	opts := virtv1.AddVolumeOptions{Name: name, Disk: &virtv1.Disk{Serial: name}}
	if serial != "" {
		opts.Disk.Serial = serial
	}
	b := virtv1.DiskBus(bus)
	switch diskType {
	case "disk":
		if b != virtv1.DiskBusSCSI && b != virtv1.DiskBusVirtio {
			return opts, fmt.Errorf("invalid --bus %q for a disk: use %s or %s", bus, virtv1.DiskBusSCSI, virtv1.DiskBusVirtio)
		}
		opts.Disk.Disk = &virtv1.DiskTarget{Bus: b}
	case "lun":
		if b != virtv1.DiskBusSCSI {
			return opts, fmt.Errorf("invalid --bus %q for a LUN: only %s", bus, virtv1.DiskBusSCSI)
		}
		opts.Disk.LUN = &virtv1.LunTarget{Bus: b}
	default:
		return opts, fmt.Errorf("invalid --disk-type %q: use disk or lun", diskType)
	}
	switch c := virtv1.DriverCache(cache); c {
	case "":
	case virtv1.CacheNone, virtv1.CacheWriteThrough, virtv1.CacheWriteBack:
		opts.Disk.Cache = c
	default:
		return opts, fmt.Errorf("invalid --cache %q: use none, writethrough or writeback", cache)
	}
	return opts, nil
}

// volumeSource finds what --volume-name names. KubeVirt's virtctl tries a
// DataVolume first; virtkit has no CDI, so only PersistentVolumeClaims.
func (s *session) volumeSource(ctx context.Context, o op, volume string) (*virtv1.HotplugVolumeSource, error) {
	var pvc corev1.PersistentVolumeClaim
	err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: volume}, &pvc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &explained{msg: fmt.Sprintf("cannot addvolume to %s %s/%s: Volume %s is not a DataVolume or PersistentVolumeClaim", o.kind, s.ns, o.name, volume),
			hint: fmt.Sprintf("Create the claim first; `kubectl get pvc -n %s` lists the claims.", s.ns)}
	case err != nil:
		return nil, s.explain(o, fmt.Errorf("reading PersistentVolumeClaim %s: %w", volume, err))
	}
	return &virtv1.HotplugVolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: volume},
		Hotpluggable:                      true,
	}}, nil
}

func removeVolumeCommand() command {
	return command{name: "removevolume", use: "removevolume (VM) --volume-name=NAME", short: "Unplug a hotplugged volume from a running virtual machine.", args: 1,
		example: "  # Detach the volume 'data' from the running VM 'tiny' and its template:\n  virtctl removevolume tiny --volume-name=data",
		setup: func(fs *pflag.FlagSet) action {
			volume := fs.String("volume-name", "", "Name of the volume in the VM's spec (required).")
			acceptPersist(fs)
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if *volume == "" {
					return &usageError{cmd: "removevolume", err: fmt.Errorf("--volume-name is required: the volume to detach")}
				}
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.RemoveVolumeOptions{Name: *volume, DryRun: s.dryRun(*dry)}
				o := op{"removevolume", kindVM, args[0]}
				if err := toVMOrVMI(ctx, s, &o, s.sub.RemoveVolume, s.sub.RemoveVMIVolume, opts); err != nil {
					return s.explain(o, err)
				}
				fmt.Fprintf(s.stdout, "Successfully submitted remove volume request to VM %s for volume %s\n", args[0], *volume)
				return nil
			}
		}}
}
