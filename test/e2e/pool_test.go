package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestPoolOfThree proves a VirtualMachinePool on virt-local: three guests
// boot, each under its own VM's name as hostname and running the cloud-init
// of its own Secret (appendIndexToSecretRefs); the pool counts them ready;
// deleting the pool takes its VMs.
func TestPoolOfThree(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "pool"
	must(t, w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	var pool *poolv1.VirtualMachinePool
	for _, obj := range w.readPoolManifest(t, "../../examples/manifests/vmpool-tiny.yaml", ns) {
		if p, ok := obj.(*poolv1.VirtualMachinePool); ok {
			pool = p
		}
		must(t, w.c.Create(ctx, obj))
	}

	for i, word := range []string{"zero", "one", "two"} {
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}}
		vmi := w.waitRunning(ctx, t, vm)
		serial := w.serialLog(ctx, t, vmi)
		waitFile(ctx, t, serial, "VIRTKIT-HOSTNAME "+vm.Name)
		waitFile(ctx, t, serial, "pool member "+word)
	}
	eventually(ctx, t, "the pool counting three ready", func() (bool, string) {
		got := &poolv1.VirtualMachinePool{}
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pool), got))
		return got.Status.Replicas == 3 && got.Status.ReadyReplicas == 3, fmt.Sprintf("status %+v", got.Status)
	})

	must(t, w.c.Delete(ctx, pool))
	eventually(ctx, t, "the pool, its VMs and their VMIs gone", func() (bool, string) {
		vms := &virtv1.VirtualMachineList{}
		vmis := &virtv1.VirtualMachineInstanceList{}
		must(t, w.c.List(ctx, vms, client.InNamespace(ns)))
		must(t, w.c.List(ctx, vmis, client.InNamespace(ns)))
		err := w.c.Get(ctx, client.ObjectKeyFromObject(pool), &poolv1.VirtualMachinePool{})
		return apierrors.IsNotFound(err) && len(vms.Items) == 0 && len(vmis.Items) == 0,
			fmt.Sprintf("pool: %v, %d VMs, %d VMIs", err, len(vms.Items), len(vmis.Items))
	})
	w.waitLaunchers(ctx, t, ns, nil)
}

// readPoolManifest reads the Secrets and the pool of a manifest into ns;
// containerDisks of localhost:5000 name the running test's registry.
func (w *world) readPoolManifest(t *testing.T, path, ns string) []client.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var out []client.Object
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		must(t, yaml.Unmarshal(doc, &meta))
		var obj client.Object
		switch meta.Kind {
		case "Secret":
			obj = &corev1.Secret{}
		case poolv1.VirtualMachinePoolKind:
			obj = &poolv1.VirtualMachinePool{}
		default:
			t.Fatalf("%s: unexpected kind %q", path, meta.Kind)
		}
		must(t, yaml.UnmarshalStrict(doc, obj))
		obj.SetNamespace(ns)
		if p, ok := obj.(*poolv1.VirtualMachinePool); ok {
			for _, v := range p.Spec.VirtualMachineTemplate.Spec.Template.Spec.Volumes {
				if cd := v.ContainerDisk; cd != nil && strings.HasPrefix(cd.Image, manifestRegistry) {
					cd.Image = w.localImage(strings.TrimPrefix(cd.Image, manifestRegistry))
				}
			}
		}
		out = append(out, obj)
	}
	return out
}
