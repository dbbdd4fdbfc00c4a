// Command instancetypes writes deploy/instancetypes/common-clusterinstancetypes.yaml:
// the VirtualMachineClusterInstancetypes of the u1, o1, cx1 and m1 series
// under the names, sizes and labels KubeVirt's common instancetypes give
// them, so that VMs written for them (virtctl create vm --instancetype
// u1.medium) find them on virtkit. `make generate` runs it.
//
//	instancetypes -out deploy/instancetypes/common-clusterinstancetypes.yaml
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/yaml"
)

// size is one member of a series: its suffix, vCPUs and memory.
type size struct {
	name   string
	cpu    uint32
	memory string
}

// series is a family of sizes sharing a spec.
type series struct {
	prefix, class, displayName, description string
	sizes                                   []size
	// hugepages: one instancetype per size with 2Mi pages and one, suffixed
	// 1gi, with 1Gi pages.
	hugepages bool
	// maxSocketsIsGuest caps the sockets at the vCPUs (no CPU hotplug room).
	maxSocketsIsGuest bool
	// shape fills in what the series sets on every size.
	shape func(*instancetypev1beta1.VirtualMachineInstancetypeSpec)
}

func general() []size {
	return []size{{"nano", 1, "512Mi"}, {"micro", 1, "1Gi"}, {"small", 1, "2Gi"}, {"medium", 1, "4Gi"},
		{"large", 2, "8Gi"}, {"xlarge", 4, "16Gi"}, {"2xlarge", 8, "32Gi"}, {"4xlarge", 16, "64Gi"}, {"8xlarge", 32, "128Gi"}}
}

func allSeries() []series {
	yes := true
	auto := virtv1.IOThreadsPolicyAuto
	u := general()
	u = append(u[:4], append([]size{{"2xmedium", 2, "4Gi"}}, u[4:]...)...)
	return []series{
		{prefix: "u1", class: "general.purpose", displayName: "General Purpose",
			description: "Shares physical cores with other VMs: a fit for most workloads.", sizes: u},
		{prefix: "o1", class: "overcommitted", displayName: "Overcommitted",
			description: "As the U series, with half of the guest's memory overcommitted.", sizes: general(),
			shape: func(s *instancetypev1beta1.VirtualMachineInstancetypeSpec) { s.Memory.OvercommitPercent = 50 }},
		{prefix: "cx1", class: "compute.exclusive", displayName: "Compute Exclusive",
			description: "Dedicated cores, an isolated emulator thread, the host's NUMA layout and huge pages, for compute-bound workloads. Needs the CPU manager and huge pages on the nodes.",
			sizes:       []size{{"medium", 1, "2Gi"}, {"large", 2, "4Gi"}, {"xlarge", 4, "8Gi"}, {"2xlarge", 8, "16Gi"}, {"4xlarge", 16, "32Gi"}, {"8xlarge", 32, "64Gi"}},
			hugepages:   true, maxSocketsIsGuest: true,
			shape: func(s *instancetypev1beta1.VirtualMachineInstancetypeSpec) {
				s.CPU.DedicatedCPUPlacement, s.CPU.IsolateEmulatorThread = &yes, &yes
				s.CPU.NUMA = &virtv1.NUMA{GuestMappingPassthrough: &virtv1.NUMAGuestMappingPassthrough{}}
				s.IOThreadsPolicy = &auto
			}},
		{prefix: "m1", class: "memory.intensive", displayName: "Memory Intensive",
			description: "Eight GiB of memory per vCPU, in huge pages, for memory-bound workloads. Needs huge pages on the nodes.",
			sizes:       []size{{"large", 2, "16Gi"}, {"xlarge", 4, "32Gi"}, {"2xlarge", 8, "64Gi"}, {"4xlarge", 16, "128Gi"}, {"8xlarge", 32, "256Gi"}},
			hugepages:   true},
	}
}

// instancetypes is every cluster instancetype of every series, in the order
// written.
func instancetypes() []instancetypev1beta1.VirtualMachineClusterInstancetype {
	var out []instancetypev1beta1.VirtualMachineClusterInstancetype
	for _, s := range allSeries() {
		pages := []string{""}
		if s.hugepages {
			pages = []string{"2Mi", "1Gi"}
		}
		for _, page := range pages {
			for _, z := range s.sizes {
				name := z.name
				if page == "1Gi" {
					name += "1gi"
				}
				it := instancetypev1beta1.VirtualMachineClusterInstancetype{
					TypeMeta: metav1.TypeMeta{APIVersion: instancetypev1beta1.SchemeGroupVersion.String(), Kind: "VirtualMachineClusterInstancetype"},
					ObjectMeta: metav1.ObjectMeta{Name: s.prefix + "." + name,
						Labels: map[string]string{
							"instancetype.kubevirt.io/class": s.class, "instancetype.kubevirt.io/version": "1",
							"instancetype.kubevirt.io/vendor": "kubevirt.io", "instancetype.kubevirt.io/size": name,
							"instancetype.kubevirt.io/cpu": fmt.Sprint(z.cpu), "instancetype.kubevirt.io/memory": z.memory,
						},
						Annotations: map[string]string{
							"instancetype.kubevirt.io/displayName": s.displayName, "instancetype.kubevirt.io/description": s.description,
						}},
					Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
						CPU:    instancetypev1beta1.CPUInstancetype{Guest: z.cpu},
						Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse(z.memory)},
					},
				}
				if page != "" {
					it.Labels["instancetype.kubevirt.io/hugepages"] = page
					it.Spec.Memory.Hugepages = &virtv1.Hugepages{PageSize: page}
				}
				if s.maxSocketsIsGuest {
					n := z.cpu
					it.Spec.CPU.MaxSockets = &n
				}
				if s.shape != nil {
					s.shape(&it.Spec)
				}
				out = append(out, it)
			}
		}
	}
	return out
}

func main() {
	out := flag.String("out", "deploy/instancetypes/common-clusterinstancetypes.yaml", "file to write")
	flag.Parse()
	var b bytes.Buffer
	b.WriteString("# Generated by 'make generate' (hack/instancetypes). Do not edit.\n" +
		"# KubeVirt's common cluster instancetypes: kubectl apply -f this file.\n")
	for _, it := range instancetypes() {
		y, err := yaml.Marshal(it)
		if err != nil {
			fmt.Fprintln(os.Stderr, "instancetypes:", err)
			os.Exit(1)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "instancetypes:", err)
		os.Exit(1)
	}
}
