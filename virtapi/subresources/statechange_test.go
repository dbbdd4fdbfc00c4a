package subresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestStateChangePatch(t *testing.T) {
	uid := types.UID("u1")
	start := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}
	stop := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid}
	cases := []struct {
		name    string
		status  virtv1.VirtualMachineStatus
		changes []virtv1.VirtualMachineStateChangeRequest
		want    string
		err     error
	}{
		{"no status at all: add it whole", virtv1.VirtualMachineStatus{}, []virtv1.VirtualMachineStateChangeRequest{start},
			`[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Start"}]}}]`, nil},
		{"status without requests: test null, add", virtv1.VirtualMachineStatus{Created: true}, []virtv1.VirtualMachineStateChangeRequest{stop, start},
			`[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"u1"},{"action":"Start"}]}]`, nil},
		{"a stop replaces queued requests", virtv1.VirtualMachineStatus{StateChangeRequests: []virtv1.VirtualMachineStateChangeRequest{start}}, []virtv1.VirtualMachineStateChangeRequest{stop},
			`[{"op":"test","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"replace","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"u1"}]}]`, nil},
		{"anything else behind queued requests is underway", virtv1.VirtualMachineStatus{StateChangeRequests: []virtv1.VirtualMachineStateChangeRequest{stop}}, []virtv1.VirtualMachineStateChangeRequest{start},
			"", errUnderway},
		{"a start failure is cleared", virtv1.VirtualMachineStatus{StartFailure: &virtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 3}}, []virtv1.VirtualMachineStateChangeRequest{start},
			`[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"remove","path":"/status/startFailure"}]`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := stateChangePatch(&virtv1.VirtualMachine{Status: c.status}, c.changes...)
			if err != c.err {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunStrategyPatch(t *testing.T) {
	always, yes := virtv1.RunStrategyAlways, true
	cases := []struct {
		name    string
		spec    virtv1.VirtualMachineSpec
		running bool
		want    string
	}{
		{"runStrategy", virtv1.VirtualMachineSpec{RunStrategy: &always}, false,
			`[{"op":"test","path":"/spec/runStrategy","value":"Always"},{"op":"replace","path":"/spec/runStrategy","value":"Halted"}]`},
		{"deprecated running keeps its field", virtv1.VirtualMachineSpec{Running: &yes}, false,
			`[{"op":"test","path":"/spec/running","value":true},{"op":"replace","path":"/spec/running","value":false}]`},
		{"neither gets runStrategy", virtv1.VirtualMachineSpec{}, true,
			`[{"op":"test","path":"/spec/runStrategy","value":null},{"op":"add","path":"/spec/runStrategy","value":"Always"}]`},
	}
	for _, c := range cases {
		got, err := runStrategyPatch(&virtv1.VirtualMachine{Spec: c.spec}, c.running)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestVolumeRequest(t *testing.T) {
	pvc := func(name, claim string, hot bool) virtv1.Volume {
		return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: hot}}}
	}
	disk := func(name string) virtv1.Disk { return virtv1.Disk{Name: name} }
	spec := virtv1.VirtualMachineInstanceSpec{
		Volumes: []virtv1.Volume{pvc("root", "root-pvc", false), pvc("hot", "hot-pvc", true)},
		Domain:  virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{disk("root"), disk("hot")}}},
	}
	add := func(name, claim string) volumeRequest {
		return volumeRequest{add: &virtv1.AddVolumeOptions{Name: name, Disk: &virtv1.Disk{},
			VolumeSource: &virtv1.HotplugVolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: true}}}}
	}
	remove := func(name string) volumeRequest { return volumeRequest{remove: &virtv1.RemoveVolumeOptions{Name: name}} }
	cases := []struct {
		name    string
		req     volumeRequest
		err     string
		volumes []string
		disks   []string
	}{
		{"add", add("new", "new-pvc"), "", []string{"root", "hot", "new"}, []string{"root", "hot", "new"}},
		{"add an existing name", add("hot", "other"), "Unable to add volume [hot] because volume with that name already exists", nil, nil},
		{"add an existing claim", add("other", "hot-pvc"), "Unable to add volume source [hot-pvc] because it already exists", nil, nil},
		{"remove by name", remove("hot"), "", []string{"root"}, []string{"root"}},
		{"remove by claim", remove("hot-pvc"), "", []string{"root"}, []string{"root"}},
		{"remove a volume that is not hotpluggable", remove("root"), "Unable to remove volume [root] because it is not hotpluggable", nil, nil},
		{"remove a missing volume", remove("nope"), "Unable to remove volume [nope] because it does not exist", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.req.verify(spec.Volumes); got != c.err {
				t.Fatalf("verify: %q, want %q", got, c.err)
			}
			if c.err != "" {
				return
			}
			out := c.req.apply(&spec)
			var vols, disks []string
			for _, v := range out.Volumes {
				vols = append(vols, v.Name)
			}
			for _, d := range out.Domain.Devices.Disks {
				disks = append(disks, d.Name)
			}
			if diff := cmp.Diff([]any{c.volumes, c.disks}, []any{vols, disks}); diff != "" {
				t.Errorf("volumes, disks (-want +got):\n%s", diff)
			}
			if len(spec.Volumes) != 2 || len(spec.Domain.Devices.Disks) != 2 {
				t.Errorf("apply changed its input: %+v", spec)
			}
		})
	}
}
