package cdiconfig

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// CDI's default requests and limits of the pods that fill claims
// (importer, upload and clone pods).
var (
	defaultCPULimit      = resource.MustParse("750m")
	defaultMemoryLimit   = resource.MustParse("600M")
	defaultCPURequest    = resource.MustParse("100m")
	defaultMemoryRequest = resource.MustParse("60M")
)

// PodResources is status.defaultPodResourceRequirements for spec, a
// CDIConfig's spec.podResourceRequirements, as CDI's controller computes
// it: CDI's defaults (requests 100m CPU and 60M memory, limits 750m and
// 600M), each replaced by spec's CPU or memory request or limit where it
// names one. Other resources in spec are left out, as by CDI.
func PodResources(spec *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	out := &corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: defaultCPULimit.DeepCopy(), corev1.ResourceMemory: defaultMemoryLimit.DeepCopy()},
		Requests: corev1.ResourceList{corev1.ResourceCPU: defaultCPURequest.DeepCopy(), corev1.ResourceMemory: defaultMemoryRequest.DeepCopy()},
	}
	if spec == nil {
		return out
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := spec.Limits[name]; ok {
			out.Limits[name] = q.DeepCopy()
		}
		if q, ok := spec.Requests[name]; ok {
			out.Requests[name] = q.DeepCopy()
		}
	}
	return out
}

// FillingPodResources are the requests and limits of a pod filling a
// claim, as cfg's status says (PodResources of a nil spec when cfg is nil
// or its status says none yet).
func FillingPodResources(cfg *cdiv1.CDIConfig) corev1.ResourceRequirements {
	if cfg == nil || cfg.Status.DefaultPodResourceRequirements == nil {
		return *PodResources(nil)
	}
	return *cfg.Status.DefaultPodResourceRequirements.DeepCopy()
}

// Preallocation says whether disks are preallocated where a DataVolume
// does not say, as cfg's status says (status.preallocation; false when
// cfg is nil).
func Preallocation(cfg *cdiv1.CDIConfig) bool {
	return cfg != nil && cfg.Status.Preallocation
}

// Environment variables of an importer pod that name the proxy it reaches
// web servers through, CDI's.
const (
	EnvHTTPProxy  = "HTTP_PROXY"
	EnvHTTPSProxy = "HTTPS_PROXY"
	EnvNoProxy    = "NO_PROXY"
)

// ProxyEnv is the environment that makes an importer reach web servers
// through the proxy cfg's status names (status.importProxy), as CDI sets
// it; nil without one. The proxy's trusted CAs are TrustedCAProxy's.
func ProxyEnv(cfg *cdiv1.CDIConfig) []corev1.EnvVar {
	if cfg == nil || cfg.Status.ImportProxy == nil {
		return nil
	}
	p := cfg.Status.ImportProxy
	var env []corev1.EnvVar
	for _, v := range []struct {
		name  string
		value *string
	}{{EnvHTTPProxy, p.HTTPProxy}, {EnvHTTPSProxy, p.HTTPSProxy}, {EnvNoProxy, p.NoProxy}} {
		if v.value != nil && *v.value != "" {
			env = append(env, corev1.EnvVar{Name: v.name, Value: *v.value})
		}
	}
	return env
}

// TrustedCAProxy names the ConfigMap, in the namespace virtkit runs in (as
// in CDI's), whose files are CAs of the import proxy that importers trust
// besides the others (status.importProxy.trustedCAProxy); "" without one.
func TrustedCAProxy(cfg *cdiv1.CDIConfig) string {
	if cfg == nil || cfg.Status.ImportProxy == nil {
		return ""
	}
	return ptr.Deref(cfg.Status.ImportProxy.TrustedCAProxy, "")
}
