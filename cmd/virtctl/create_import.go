package main

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

const importFlag = "--volume-import"

// importKeys are the keys each --volume-import type takes, besides type,
// size, name and bootorder.
var importKeys = map[string][]string{
	"http":     {"url", "secretref", "certconfigmap"},
	"registry": {"url", "secretref", "certconfigmap"},
	"pvc":      {"src"},
	"ds":       {"src"},
	"blank":    nil,
}

// addImport adds one --volume-import as KubeVirt's virtctl does: a
// dataVolumeTemplate of the source, its dataVolume volume, and a disk when
// it has a boot order.
func addImport(vm *virtv1.VirtualMachine, boot map[uint]string, value string, suffix func() string) error {
	kv := map[string]string{}
	for _, pair := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok || v == "" {
			return fmt.Errorf("%s=%s: %q is not KEY:VALUE", importFlag, value, pair)
		}
		kv[k] = v
	}
	typ := kv["type"]
	keys, ok := importKeys[typ]
	if !ok {
		return fmt.Errorf("%s=%s: invalid volume import type %q, supported values are: blank, ds, http, pvc, registry", importFlag, value, typ)
	}
	allowed := append([]string{"type", "size", "name", "bootorder"}, keys...)
	for k := range kv {
		if !contains(allowed, k) {
			return fmt.Errorf("%s=%s: unknown key %q for type %s (keys %s)", importFlag, value, k, typ, strings.Join(allowed, ", "))
		}
	}
	spec := cdiv1.DataVolumeSpec{}
	switch typ {
	case "http", "registry":
		if kv["url"] == "" {
			return fmt.Errorf("%s=%s: url is required with %s volume source", importFlag, value, typ)
		}
		if typ == "http" {
			spec.Source = &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: kv["url"], SecretRef: kv["secretref"], CertConfigMap: kv["certconfigmap"]}}
		} else {
			r := &cdiv1.DataVolumeSourceRegistry{URL: ptrTo(kv["url"])}
			if s := kv["secretref"]; s != "" {
				r.SecretRef = &s
			}
			if c := kv["certconfigmap"]; c != "" {
				r.CertConfigMap = &c
			}
			spec.Source = &cdiv1.DataVolumeSource{Registry: r}
		}
	case "pvc", "ds":
		src := kv["src"]
		if src == "" {
			return fmt.Errorf("%s=%s: src must be specified", importFlag, value)
		}
		ns, name, found := strings.Cut(src, "/")
		if !found {
			ns, name = "", src
		}
		if name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("%s=%s: src %q: want [NAMESPACE/]NAME", importFlag, value, src)
		}
		if typ == "pvc" {
			if ns == "" {
				return fmt.Errorf("%s=%s: namespace of pvc %q must be specified", importFlag, value, name)
			}
			spec.Source = &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: ns, Name: name}}
		} else {
			spec.SourceRef = &cdiv1.DataVolumeSourceRef{Kind: cdiv1.DataVolumeDataSource, Name: name}
			if ns != "" {
				spec.SourceRef.Namespace = &ns
			}
		}
	case "blank":
		spec.Source = &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}}
	}
	spec.Storage = &cdiv1.StorageSpec{}
	if size := kv["size"]; size != "" {
		q, err := resource.ParseQuantity(size)
		if err != nil {
			return fmt.Errorf("%s=%s: size %q: %w", importFlag, value, size, err)
		}
		spec.Storage.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: q}
	} else if typ != "pvc" && typ != "ds" {
		return fmt.Errorf("%s=%s: size must be specified for type %s", importFlag, value, typ)
	}
	name := kv["name"]
	if name == "" {
		name = "imported-volume-" + suffix()
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%s=%s: invalid name %q: %s", importFlag, value, name, strings.Join(errs, ","))
	}
	p := volumeParam{name: name}
	if b, ok := kv["bootorder"]; ok {
		n, err := strconv.ParseUint(b, 10, 32)
		if err != nil || n == 0 {
			return fmt.Errorf("%s=%s: bootorder must be a number greater than 0", importFlag, value)
		}
		p.bootOrder = uint(n)
	}
	spec0 := &vm.Spec.Template.Spec
	if err := addVolume(spec0, boot, importFlag, p, virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: name}}); err != nil {
		return err
	}
	vm.Spec.DataVolumeTemplates = append(vm.Spec.DataVolumeTemplates, virtv1.DataVolumeTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
