package cdiconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

func TestNextStatus(t *testing.T) {
	url := func(s string) *string { return &s }
	pods := PodResources(nil)
	onecpu := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	proxy := &cdiv1.ImportProxy{HTTPSProxy: url("http://proxy.example.com:3128")}
	for _, tc := range []struct {
		name     string
		spec     cdiv1.CDIConfigSpec
		defaults Defaults
		classes  []string
		want     cdiv1.CDIConfigStatus
		wantErrs []string
	}{
		{name: "empty", want: cdiv1.CDIConfigStatus{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.06"}, DefaultPodResourceRequirements: pods}},
		{name: "defaults", defaults: Defaults{UploadProxyURL: "https://127.0.0.1:8443"},
			want: cdiv1.CDIConfigStatus{UploadProxyURL: url("https://127.0.0.1:8443"), FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.06"}, DefaultPodResourceRequirements: pods}},
		{name: "spec wins", defaults: Defaults{UploadProxyURL: "https://127.0.0.1:8443"}, classes: []string{"slow", "fast"},
			spec: cdiv1.CDIConfigSpec{UploadProxyURLOverride: url("https://upload.example.com"), ScratchSpaceStorageClass: url("fast"),
				FilesystemOverhead:      &cdiv1.FilesystemOverhead{Global: "0.1", StorageClass: map[string]cdiv1.Percent{"fast": "0.055", "thin": "0"}},
				PodResourceRequirements: onecpu, ImportProxy: proxy, Preallocation: ptr.To(true)},
			want: cdiv1.CDIConfigStatus{UploadProxyURL: url("https://upload.example.com"), ScratchSpaceStorageClass: "fast",
				FilesystemOverhead:             &cdiv1.FilesystemOverhead{Global: "0.1", StorageClass: map[string]cdiv1.Percent{"fast": "0.055", "thin": "0"}},
				DefaultPodResourceRequirements: PodResources(onecpu), ImportProxy: proxy, Preallocation: true}},
		{name: "a scratch class that does not exist", spec: cdiv1.CDIConfigSpec{ScratchSpaceStorageClass: url("gone")}, classes: []string{"fast"},
			want: cdiv1.CDIConfigStatus{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.06"}, DefaultPodResourceRequirements: pods}},
		{name: "invalid values left out",
			spec:     cdiv1.CDIConfigSpec{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "6%", StorageClass: map[string]cdiv1.Percent{"a": "0.1234", "b": "1.5", "c": "0.2"}}},
			want:     cdiv1.CDIConfigStatus{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.06", StorageClass: map[string]cdiv1.Percent{"c": "0.2"}}, DefaultPodResourceRequirements: pods},
			wantErrs: []string{`spec.filesystemOverhead.global: "6%"`, `storageClass[a]: "0.1234"`, `storageClass[b]: "1.5"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := NextStatus(&cdiv1.CDIConfig{Spec: tc.spec}, tc.defaults, tc.classes)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("errors %v, want %d", errs, len(tc.wantErrs))
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tc.wantErrs[i]) {
					t.Errorf("error %d: %v, want it to contain %q", i, e, tc.wantErrs[i])
				}
			}
		})
	}
}

func TestOverhead(t *testing.T) {
	cfg := &cdiv1.CDIConfig{Status: cdiv1.CDIConfigStatus{FilesystemOverhead: &cdiv1.FilesystemOverhead{Global: "0.1",
		StorageClass: map[string]cdiv1.Percent{"fast": "0.055", "broken": "x"}}}}
	for class, want := range map[string]float64{"fast": 0.055, "other": 0.1, "": 0.1, "broken": 0.1} {
		if got := Overhead(cfg, class); got != want {
			t.Errorf("Overhead(%q) = %v, want %v", class, got, want)
		}
	}
	if got := Overhead(nil, "fast"); got != 0.06 {
		t.Errorf("Overhead without a CDIConfig = %v, want 0.06", got)
	}
}

func TestHonorsWaitForFirstConsumer(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *cdiv1.CDIConfig
		want bool
	}{
		{"none made yet", nil, true},
		{"gate listed", &cdiv1.CDIConfig{Spec: cdiv1.CDIConfigSpec{FeatureGates: []string{"Other", HonorWaitForFirstConsumer}}}, true},
		{"gate removed", &cdiv1.CDIConfig{Spec: cdiv1.CDIConfigSpec{FeatureGates: []string{"Other"}}}, false},
		{"no gates", &cdiv1.CDIConfig{}, false},
	} {
		if got := HonorsWaitForFirstConsumer(tc.cfg); got != tc.want {
			t.Errorf("%s: HonorsWaitForFirstConsumer = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPodResources(t *testing.T) {
	defaults := PodResources(nil)
	want := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("600M")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("60M")},
	}
	if d := cmp.Diff(want, *defaults); d != "" {
		t.Errorf("CDI's defaults (-want +got):\n%s", d)
	}
	got := PodResources(&corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi"), "example.com/gpu": resource.MustParse("1")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	})
	want.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
	want.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	if d := cmp.Diff(want, *got); d != "" {
		t.Errorf("the spec's CPU and memory over CDI's defaults, nothing else (-want +got):\n%s", d)
	}
	if d := cmp.Diff(*defaults, FillingPodResources(nil)); d != "" {
		t.Errorf("FillingPodResources(nil) (-want +got):\n%s", d)
	}
}

func TestProxyEnv(t *testing.T) {
	if env := ProxyEnv(&cdiv1.CDIConfig{}); env != nil {
		t.Errorf("ProxyEnv without a proxy = %v, want none", env)
	}
	http, empty := "http://proxy:3128", ""
	cfg := &cdiv1.CDIConfig{Status: cdiv1.CDIConfigStatus{ImportProxy: &cdiv1.ImportProxy{HTTPProxy: &http, HTTPSProxy: &http, NoProxy: &empty}}}
	want := []corev1.EnvVar{{Name: EnvHTTPProxy, Value: http}, {Name: EnvHTTPSProxy, Value: http}}
	if d := cmp.Diff(want, ProxyEnv(cfg)); d != "" {
		t.Errorf("ProxyEnv (-want +got):\n%s", d)
	}
}

func TestIsInsecureRegistry(t *testing.T) {
	cfg := &cdiv1.CDIConfig{Spec: cdiv1.CDIConfigSpec{InsecureRegistries: []string{"registry.lab:5000", "10.0.0.7"}}}
	for image, want := range map[string]bool{
		"registry.lab:5000/guest:v1":   true,
		"registry.lab/guest:v1":        false, // another port
		"10.0.0.7/a/b@sha256:00":       true,
		"quay.io/containerdisks/f:41":  false,
		"evil.example/registry.lab:50": false,
	} {
		if got := IsInsecureRegistry(InsecureRegistries(cfg), image); got != want {
			t.Errorf("IsInsecureRegistry(%q) = %v, want %v", image, got, want)
		}
	}
	if IsInsecureRegistry(InsecureRegistries(nil), "registry.lab:5000/guest") {
		t.Error("without a CDIConfig, a registry is insecure")
	}
}
