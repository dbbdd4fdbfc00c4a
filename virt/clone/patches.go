package clone

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// op is one JSON patch operation (RFC 6902) of a restore's spec.patches.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patches are the JSON patches a clone of vm (the VM as its snapshot holds
// it) gives the restore that makes the new VM, in this order:
//   - each interface gets the MAC spec.newMacAddresses names for it, or
//     none (the new VM's network draws one);
//   - the SMBIOS serial becomes spec.newSMBiosSerial, or none;
//   - the firmware UUID goes (the new VM's is derived from its name);
//   - the labels and annotations of the VM and of its template that the
//     filters leave out go (the restore's own annotation stays);
//   - then spec.patches, as given.
//
// Each operation is an add (which sets a member whether or not it was
// there) or a remove of a member that is there, so that every patch
// applies to the VM it was made from.
func Patches(vm *virtv1.VirtualMachine, spec *clonev1.VirtualMachineCloneSpec) ([]string, error) {
	var ops []op
	var tmpl *virtv1.VirtualMachineInstanceTemplateSpec
	if vm.Spec.Template != nil {
		tmpl = vm.Spec.Template
	}
	if tmpl != nil {
		for i, iface := range tmpl.Spec.Domain.Devices.Interfaces {
			path := fmt.Sprintf("/spec/template/spec/domain/devices/interfaces/%d/macAddress", i)
			if mac := spec.NewMacAddresses[iface.Name]; mac != "" {
				ops = append(ops, op{Op: "add", Path: path, Value: mac})
			} else if iface.MacAddress != "" {
				ops = append(ops, op{Op: "remove", Path: path})
			}
		}
		if fw := tmpl.Spec.Domain.Firmware; fw != nil {
			const serial = "/spec/template/spec/domain/firmware/serial"
			if s := spec.NewSMBiosSerial; s != nil && *s != "" {
				ops = append(ops, op{Op: "add", Path: serial, Value: *s})
			} else if fw.Serial != "" {
				ops = append(ops, op{Op: "remove", Path: serial})
			}
			if fw.UUID != "" {
				ops = append(ops, op{Op: "remove", Path: "/spec/template/spec/domain/firmware/uuid"})
			}
		} else if s := spec.NewSMBiosSerial; s != nil && *s != "" {
			ops = append(ops, op{Op: "add", Path: "/spec/template/spec/domain/firmware", Value: map[string]string{"serial": *s}})
		}
	}
	ops = append(ops, removals(vm.Labels, spec.LabelFilters, "/metadata/labels")...)
	annotations := make(map[string]string, len(vm.Annotations))
	for k, v := range vm.Annotations {
		if k != snapshot.LastRestoreAnnotation {
			annotations[k] = v
		}
	}
	ops = append(ops, removals(annotations, spec.AnnotationFilters, "/metadata/annotations")...)
	if tmpl != nil {
		ops = append(ops, removals(tmpl.ObjectMeta.Labels, spec.Template.LabelFilters, "/spec/template/metadata/labels")...)
		ops = append(ops, removals(tmpl.ObjectMeta.Annotations, spec.Template.AnnotationFilters, "/spec/template/metadata/annotations")...)
	}
	out := make([]string, 0, len(ops)+len(spec.Patches))
	for _, o := range ops {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return append(out, spec.Patches...), nil
}

// removals removes from m, at base, the keys filters leave out, in key
// order.
func removals(m map[string]string, filters []string, base string) []op {
	var keys []string
	for k := range m {
		if !Keep(filters, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	ops := make([]op, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, op{Op: "remove", Path: base + "/" + escape(k)})
	}
	return ops
}

// escape escapes key as a JSON pointer token (RFC 6901).
func escape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
