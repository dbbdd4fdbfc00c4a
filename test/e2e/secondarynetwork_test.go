package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/network"
)

// Secondary networks end to end: two VMs on the pod network and on a
// Multus network (a NetworkAttachmentDefinition of the bridge plugin with
// host-local addresses) bridged to their guests. Their launcher pods ask
// for it as KubeVirt's do, the node attaches it as Multus does, each guest
// takes its secondary address by DHCP from its handler and the VMIs report
// both interfaces; one guest reaches the other's web server over the
// secondary network, which only that network carries.
func TestSecondaryNetwork(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := "default"
	nad := w.bridgeNetwork(ctx, t, ns, "sec-net", "vks", "192.168.177.0/24")

	vms := map[string]*virtv1.VirtualMachine{}
	for _, name := range []string{"sec-a", "sec-b"} {
		vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
		vm.Name = name
		s := &vm.Spec.Template.Spec
		s.Networks = append(s.Networks, virtv1.Network{Name: "sec", NetworkSource: virtv1.NetworkSource{
			Multus: &virtv1.MultusNetwork{NetworkName: "sec-net"}}})
		s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, virtv1.Interface{Name: "sec",
			InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
		must(t, w.c.Create(ctx, vm))
		vms[name] = vm
	}
	secIP := map[string]string{}
	podIP := map[string]string{}
	lease := regexp.MustCompile(`VIRTKIT-NET eth1 ip=(192\.168\.177\.\d+)/24 `)
	for name, vm := range vms {
		v := w.waitRunning(ctx, t, vm)
		serial := w.serialLog(ctx, t, v)
		waitFile(ctx, t, serial, testguest.ReadyMarker)
		line, err := testguest.WaitLine(ctx, serial, lease)
		must(t, err)
		secIP[name] = lease.FindStringSubmatch(line)[1]

		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}))
		if len(pods.Items) != 1 || pods.Items[0].Annotations[network.MultusNetworksAnnotation] != `[{"name":"sec-net","namespace":"default","interface":"podadd93534eeb"}]` {
			t.Errorf("%s's launcher pods %d, networks %q", name, len(pods.Items), pods.Items[0].Annotations[network.MultusNetworksAnnotation])
		}
		v = w.waitVMI(ctx, t, vm, "reporting both interfaces", func(v *virtv1.VirtualMachineInstance) bool {
			return len(v.Status.Interfaces) == 2 && v.Status.Interfaces[1].IP == secIP[name]
		})
		podIP[name] = v.Status.Interfaces[0].IP
		if got := v.Status.Interfaces[1]; got.Name != "sec" || got.MAC == "" || got.MAC == v.Status.Interfaces[0].MAC {
			t.Errorf("%s's secondary interface status %+v", name, got)
		}
	}
	if secIP["sec-a"] == secIP["sec-b"] {
		t.Errorf("both guests took %s on the secondary network", secIP["sec-a"])
	}
	// sec-a fetches sec-b's page over the secondary network.
	httpAnswers(ctx, t, "http://"+podIP["sec-a"]+"/cgi-bin/get?"+secIP["sec-b"], "heartbeat=")

	// Both go: deleteVM waits for the namespace to have no pod left.
	must(t, w.c.Delete(ctx, vms["sec-a"]))
	w.deleteVM(ctx, t, vms["sec-b"])
	must(t, w.c.Delete(ctx, nad))
	// Their secondary addresses went back to host-local.
	w.waitNoLeases(ctx, t, "sec-net", "192.168.177.")
}

// bridgeNetwork makes the NetworkAttachmentDefinition name in ns: the
// bridge plugin on a bridge of its own (its name starts with prefix; it is
// removed when t ends) with host-local addresses from subnet.
func (w *world) bridgeNetwork(ctx context.Context, t *testing.T, ns, name, prefix, subnet string) *unstructured.Unstructured {
	t.Helper()
	bridge := prefix + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"config": `{"cniVersion":"1.0.0","name":"` + name + `","type":"bridge","bridge":"` + bridge +
			`","ipam":{"type":"host-local","ranges":[[{"subnet":"` + subnet + `"}]]}}`},
	}}
	must(t, w.c.Create(ctx, nad))
	return nad
}

// waitNoLeases waits until host-local holds no address starting with
// ipPrefix on the network name, on any node.
func (w *world) waitNoLeases(ctx context.Context, t *testing.T, name, ipPrefix string) {
	t.Helper()
	eventually(ctx, t, "no address leased on "+name, func() (bool, string) {
		out, _ := exec.Command("sh", "-c", "ls "+w.cfg.DataDir+"/nodes/*/cni/secondary/"+name+" 2>/dev/null").Output()
		var leased []string
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, ipPrefix) {
				leased = append(leased, f)
			}
		}
		return len(leased) == 0, fmt.Sprint(leased)
	})
}
