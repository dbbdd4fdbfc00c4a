package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/accesscred"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// podFacts reads what the storage planner needs from the cluster and the
// pod (whose file system is files): each claim's volume mode,
// capacity and read-only access, the data of the secrets cloud-init volumes
// name (from the pod's secret volumes), and the disk file in each
// containerDisk's image. It also returns, by volume name, the claims as
// the VMI's status reports them. Claims are read uncached, once per start:
// the handler does not watch them.
func (r *Reconciler) podFacts(ctx context.Context, vmi *virtv1.VirtualMachineInstance, files storage.FS) (storage.Pod, map[string]*virtv1.PersistentVolumeClaimInfo, error) {
	pod := storage.Pod{}
	claims := map[string]*virtv1.PersistentVolumeClaimInfo{}
	for i, v := range vmi.Spec.Volumes {
		if v.ContainerDisk != nil {
			f, err := containerDiskFacts(files, r.cfg.StorageLayout, v.Name, v.ContainerDisk)
			if err != nil {
				return pod, nil, fmt.Errorf("handler: VMI %s/%s spec.volumes[%d].containerDisk (%s): %w", vmi.Namespace, vmi.Name, i, v.Name, err)
			}
			if pod.Volumes == nil {
				pod.Volumes = map[string]storage.VolumeFacts{}
			}
			pod.Volumes[v.Name] = f
		}
		if claim := migrate.ClaimOf(&vmi.Spec.Volumes[i]); claim != "" {
			readOnly := v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
			f, info, err := r.claimFacts(ctx, vmi.Namespace, claim, readOnly)
			if err != nil {
				return pod, nil, fmt.Errorf("handler: VMI %s/%s spec.volumes[%d] (%s): %w", vmi.Namespace, vmi.Name, i, v.Name, err)
			}
			if info != nil {
				claims[v.Name] = info
			}
			if pod.Volumes == nil {
				pod.Volumes = map[string]storage.VolumeFacts{}
			}
			pod.Volumes[v.Name] = f
		}
		// The secrets cloud-init volumes name, where the launcher pod
		// mounts them: the handler has no access to Secrets of its own.
		user, network := storage.CloudInitSecretRefs(&vmi.Spec.Volumes[i])
		for _, s := range []struct {
			ref     *k8sv1.LocalObjectReference
			network bool
		}{{user, false}, {network, true}} {
			if s.ref == nil || s.ref.Name == "" {
				continue
			}
			dir := r.cfg.StorageLayout.CloudInitSecretDir(v.Name, s.network)
			data, err := storage.ReadFolder(ctx, storage.FSInspector{FS: files}, files, dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue // the planner names the secret the pod lacks
			}
			if err != nil {
				return pod, nil, fmt.Errorf("handler: VMI %s/%s spec.volumes[%d] (%s): secret %s mounted at %s: %w", vmi.Namespace, vmi.Name, i, v.Name, s.ref.Name, dir, err)
			}
			if pod.Secrets == nil {
				pod.Secrets = map[string]map[string][]byte{}
			}
			pod.Secrets[s.ref.Name] = data
		}
	}
	// The SSH keys cloud-init propagates, where the pod mounts them.
	for _, name := range accesscred.CloudInitSecrets(vmi.Spec.AccessCredentials) {
		data, err := storage.ReadFolder(ctx, storage.FSInspector{FS: files}, files, accesscred.Dir(name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the planner names the secret the pod lacks
		}
		if err != nil {
			return pod, nil, fmt.Errorf("handler: VMI %s/%s spec.accessCredentials: secret %s mounted at %s: %w", vmi.Namespace, vmi.Name, name, accesscred.Dir(name), err)
		}
		if pod.Secrets == nil {
			pod.Secrets = map[string]map[string][]byte{}
		}
		pod.Secrets[name] = data
	}
	return pod, claims, nil
}

// claimFacts reads the claim name: what the planner needs of it, and the
// claim as KubeVirt reports it in a volume's status (nil when it is
// missing).
func (r *Reconciler) claimFacts(ctx context.Context, ns, name string, readOnly bool) (storage.VolumeFacts, *virtv1.PersistentVolumeClaimInfo, error) {
	var pvc k8sv1.PersistentVolumeClaim
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pvc)
	if apierrors.IsNotFound(err) {
		return storage.VolumeFacts{ReadOnly: readOnly}, nil, nil // the planner names what is missing in the pod
	}
	if err != nil {
		return storage.VolumeFacts{}, nil, fmt.Errorf("claim %s: %w", name, err)
	}
	info := migrate.ClaimInfo(name, &pvc)
	f := storage.VolumeFacts{ReadOnly: readOnly}
	if dvspec.IsBlock(&pvc) {
		f.Mode = storage.VolumeModeBlock
	}
	if q, ok := pvc.Status.Capacity[k8sv1.ResourceStorage]; ok {
		f.CapacityBytes = q.Value()
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 1 && modes[0] == k8sv1.ReadOnlyMany {
		f.ReadOnly = true
	}
	return f, info, nil
}

// runningDomain reads the facts KubeVirt reports from the running domain's
// document: machine type, CPU topology, memory and each disk's device.
func (r *Reconciler) runningDomain(ctx context.Context, g *guest) (RunningDomain, error) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	doc, err := g.dom.XML(callCtx, g.domain, domain.XMLOptions{})
	if err != nil {
		return RunningDomain{}, fmt.Errorf("handler: VMI %s: %w", g.key, err)
	}
	return RunningDomainOf(doc), nil
}

// RunningDomainOf extracts RunningDomain from a running domain's document.
func RunningDomainOf(doc *libvirtxml.Domain) RunningDomain {
	var rd RunningDomain
	if doc.OS != nil && doc.OS.Type != nil {
		rd.Machine = doc.OS.Type.Machine
	}
	if v := doc.VCPU; v != nil {
		rd.MaxVCPUs, rd.VCPUs = v.Value, v.Current
		if rd.VCPUs == 0 {
			rd.VCPUs = v.Value // all online
		}
	}
	if doc.CPU != nil && doc.CPU.Topology != nil {
		t := doc.CPU.Topology
		// The topology spans every socket that can be plugged
		// (maxSockets); the current one is that of the online vCPUs.
		sockets := uint32(t.Sockets)
		if per := uint(max(t.Cores, 1) * max(t.Threads, 1)); rd.VCPUs > 0 {
			sockets = uint32(rd.VCPUs / per)
		}
		rd.Topology = &virtv1.CPUTopology{Sockets: sockets, Cores: uint32(t.Cores), Threads: uint32(t.Threads)}
	}
	switch {
	case doc.CurrentMemory != nil:
		rd.MemoryBytes = int64(domain.MemoryBytes(doc.CurrentMemory.Value, doc.CurrentMemory.Unit))
	case doc.Memory != nil:
		rd.MemoryBytes = int64(domain.MemoryBytes(doc.Memory.Value, doc.Memory.Unit))
	}
	if doc.Devices != nil && doc.Memory != nil {
		for _, md := range doc.Devices.Memorydevs {
			if md.Model != "virtio-mem" || md.Target == nil || md.Target.Size == nil {
				continue
			}
			// libvirt's <memory> and <currentMemory> count the whole
			// device, plugged or not.
			rd.PluggableBytes = int64(domain.MemoryBytes(md.Target.Size.Value, md.Target.Size.Unit))
			if r := md.Target.Requested; r != nil {
				rd.PluggedBytes = int64(domain.MemoryBytes(r.Value, r.Unit))
			}
			rd.BootMemoryBytes = int64(domain.MemoryBytes(doc.Memory.Value, doc.Memory.Unit)) - rd.PluggableBytes
			rd.MemoryBytes = rd.BootMemoryBytes + rd.PluggedBytes
		}
	}
	if doc.Devices != nil {
		for _, d := range doc.Devices.Disks {
			if d.Alias == nil || d.Target == nil {
				continue
			}
			if vol, ok := strings.CutPrefix(d.Alias.Name, "ua-"); ok {
				if d.Device == "cdrom" && domain.Media(&d) == nil {
					if rd.Empty == nil {
						rd.Empty = map[string]string{}
					}
					rd.Empty[vol] = d.Target.Dev
					continue
				}
				if rd.Targets == nil {
					rd.Targets = map[string]string{}
				}
				rd.Targets[vol] = d.Target.Dev
			}
		}
	}
	return rd
}
