package admission_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virtapi/admission"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// apiWithWebhooks starts a real apiserver with virtkit's webhook
// configurations and serves the webhooks until stop is called.
func apiWithWebhooks(t *testing.T) (cp *kubeenv.ControlPlaneEnv, stop func()) {
	t.Helper()
	mutating, validating := admission.Configurations(admission.Service{Namespace: "kubevirt", Name: "virt-api", Port: 443})
	cp = kubeenv.ControlPlane(t, kubeenv.WithWebhooks(
		[]*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{validating}))
	o := cp.Env.WebhookInstallOptions
	srv := webhook.NewServer(webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir})
	admission.Register(srv, cp.Client.Scheme(), nil, admission.WithInstancetypes(cp.Client))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	addr := net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort))
	testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 20*time.Millisecond, "the webhook server serving on "+addr, func() (bool, string) {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return cp, stop
}

func minimalVMI(name string) *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{"memory": resource.MustParse("128Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/guest:1"}}}},
		},
	}
}

func TestWebhooksOnARealAPIServer(t *testing.T) {
	cp, stop := apiWithWebhooks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := cp.Client

	t.Run("a VMI is stored defaulted", func(t *testing.T) {
		assert.NilError(t, c.Create(ctx, minimalVMI("defaulted")))
		var got virtv1.VirtualMachineInstance
		assert.NilError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "defaulted"}, &got))
		assert.Check(t, got.Spec.Domain.Machine != nil && got.Spec.Domain.Machine.Type == "q35", "machine type: %+v", got.Spec.Domain.Machine)
		assert.Check(t, got.Spec.Domain.Devices.Disks[0].Disk != nil && got.Spec.Domain.Devices.Disks[0].Disk.Bus == "virtio", "disk: %+v", got.Spec.Domain.Devices.Disks[0])
		assert.Check(t, is.Len(got.Spec.Networks, 1), "the pod network is attached by default")
		assert.Check(t, is.DeepEqual(got.Finalizers, []string{virtv1.VirtualMachineInstanceFinalizer}),
			"born with the VMI controller's finalizer, which saves that controller a write")
	})

	t.Run("an invalid VMI is refused with its field paths", func(t *testing.T) {
		vmi := minimalVMI("invalid")
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "nosuchvolume"})
		err := c.Create(ctx, vmi)
		assert.Assert(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
		var status apierrors.APIStatus
		assert.Assert(t, errors.As(err, &status))
		var fields []string
		for _, cause := range status.Status().Details.Causes {
			fields = append(fields, cause.Field)
		}
		assert.Check(t, is.Contains(fields, "spec.domain.devices.disks[1].name"), "causes: %v", status.Status().Details.Causes)
		assert.Check(t, is.Contains(err.Error(), "nosuchvolume"))
	})

	t.Run("a VMI's spec cannot change after creation", func(t *testing.T) {
		var got virtv1.VirtualMachineInstance
		assert.NilError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "defaulted"}, &got))
		got.Spec.Domain.Devices.Disks[0].Serial = "changed"
		err := c.Update(ctx, &got)
		assert.Assert(t, apierrors.IsInvalid(err), "want the update refused, got %v", err)
		assert.Check(t, is.Contains(err.Error(), "cannot change after creation"))
		got.Labels = map[string]string{"metadata": "may-change"}
		got.Spec.Domain.Devices.Disks[0].Serial = ""
		assert.NilError(t, c.Update(ctx, &got), "metadata changes pass")
	})

	t.Run("a VM is defaulted and validated", func(t *testing.T) {
		running := true
		vm := &virtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "default"},
			Spec: virtv1.VirtualMachineSpec{
				Running:     &running,
				RunStrategy: new(virtv1.RunStrategyAlways),
				Template:    &virtv1.VirtualMachineInstanceTemplateSpec{Spec: minimalVMI("x").Spec},
			},
		}
		err := c.Create(ctx, vm)
		assert.Assert(t, apierrors.IsInvalid(err), "running and runStrategy together: got %v", err)
		vm.Spec.Running = nil
		assert.NilError(t, c.Create(ctx, vm))
		var got virtv1.VirtualMachine
		assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(vm), &got))
		assert.Check(t, got.Spec.Template.Spec.Domain.Machine != nil && got.Spec.Template.Spec.Domain.Machine.Type == "q35")
	})

	t.Run("a VM's inferFromVolume is resolved from its claim", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "fedora-root", Namespace: "default",
			Labels: map[string]string{"instancetype.kubevirt.io/default-instancetype": "u1.small"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		assert.NilError(t, c.Create(ctx, pvc))
		tmpl := minimalVMI("x").Spec
		tmpl.Domain.Resources = virtv1.ResourceRequirements{}
		tmpl.Volumes = []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fedora-root"}}}}}
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "inferred", Namespace: "default"},
			Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.RunStrategyHalted),
				Instancetype: &virtv1.InstancetypeMatcher{InferFromVolume: "root"},
				Template:     &virtv1.VirtualMachineInstanceTemplateSpec{Spec: tmpl}}}
		assert.NilError(t, c.Create(ctx, vm))
		var got virtv1.VirtualMachine
		assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(vm), &got))
		assert.DeepEqual(t, got.Spec.Instancetype, &virtv1.InstancetypeMatcher{Name: "u1.small", Kind: "virtualmachineclusterinstancetype"})

		// A volume that names no claim is refused, naming the field.
		bad := vm.DeepCopy()
		bad.Name, bad.Spec.Instancetype = "uninferable", &virtv1.InstancetypeMatcher{InferFromVolume: "root"}
		bad.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "missing"
		err := c.Create(ctx, bad)
		assert.ErrorContains(t, err, "spec.instancetype.inferFromVolume")
	})

	t.Run("without virt-api, creating fails but deleting works", func(t *testing.T) {
		stop()
		err := c.Create(ctx, minimalVMI("nowebhook"))
		assert.Assert(t, err != nil && strings.Contains(err.Error(), "virtualmachines.kubevirt.io"), "want a webhook failure, got %v", err)
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "default"}}
		assert.NilError(t, c.Delete(ctx, vm), "deleting must not need virt-api")
		vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: "default"}}
		assert.NilError(t, c.Delete(ctx, vmi))
	})
}

func TestConfigurationsNeverInterceptDeletes(t *testing.T) {
	m, v := admission.Configurations(admission.Service{Namespace: "kubevirt", Name: "virt-api", Port: 443})
	var rules []admissionregistrationv1.RuleWithOperations
	for _, w := range m.Webhooks {
		rules = append(rules, w.Rules...)
		assert.Check(t, *w.TimeoutSeconds <= 10)
		assert.Check(t, is.Equal(*w.FailurePolicy, admissionregistrationv1.Fail))
	}
	for _, w := range v.Webhooks {
		rules = append(rules, w.Rules...)
		assert.Check(t, *w.TimeoutSeconds <= 10)
	}
	for _, r := range rules {
		for _, op := range r.Operations {
			assert.Check(t, op != admissionregistrationv1.Delete && op != admissionregistrationv1.OperationAll, "rule %v intercepts %s", r.Resources, op)
		}
	}
}
