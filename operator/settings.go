package operator

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// Settings are the operator's own: what its flags say, before any KubeVirt
// CR is read. Plain data.
type Settings struct {
	// Namespace is the operator's namespace: the only one whose KubeVirt CR
	// it honours, and where the daemons run (required).
	Namespace string
	// Registry and Tag are where the daemons' images come from when the CR
	// does not say (spec.imageRegistry, spec.imageTag): REGISTRY/NAME:TAG.
	// Both required; Tag is normally the operator's own version.
	Registry, Tag string
	// Version is the operator's version (status.operatorVersion).
	Version string
	// APIServer, "host:port", is for clusters whose pods cannot reach the
	// kubernetes Service (virt-local's real node): the daemons then take
	// the host's network (deploy.Handler.APIServer).
	APIServer string
	// LauncherCapabilitiesCache is a node folder the launchers share for
	// libvirt's QEMU capability probe (deploy.Controller); empty: none.
	LauncherCapabilitiesCache string
	// Emulation makes every node's handler run its guests under software
	// emulation and offer no devices.kubevirt.io/kvm, whatever the CR's
	// useEmulation says (deploy.Handler.Emulation): for clusters whose
	// /dev/kvm is present but must not be used. Without it the CR decides,
	// live, as in KubeVirt. virt-controller follows the CR either way, so
	// such a cluster sets the CR's useEmulation too, or its VMIs wait for
	// a KVM device no node offers.
	Emulation bool
	// KubeletPodsDir and HandlerStateDir are node folders for nodes laid
	// out otherwise than a kubeadm node: the kubelet's pods (its
	// --root-dir's pods) and virt-handler's records
	// (deploy.Handler.PodsDir, StateDir); empty: the defaults.
	KubeletPodsDir, HandlerStateDir string
	// Replicas is the size of virt-api's and virt-controller's
	// Deployments when the CR's spec.infra.replicas does not say; 0 is 2.
	Replicas int32
	// WebhookURL, https://HOST[:PORT], is where the apiserver calls the
	// operator's [Webhook] when the operator does not run as the release
	// manifest's pods (embedded in another program, or outside the
	// cluster): the webhook configuration then names it instead of the
	// operator's Service, which is not made, and the operator's serving
	// certificate is for HOST. Empty: the Service.
	WebhookURL string
}

// Check reports the first field that makes s unusable.
func (s Settings) Check() error {
	var errs []error
	if s.Namespace == "" {
		errs = append(errs, errors.New("operator: Settings.Namespace: required"))
	}
	if s.Registry == "" {
		errs = append(errs, errors.New("operator: Settings.Registry: required"))
	}
	if s.Tag == "" {
		errs = append(errs, errors.New("operator: Settings.Tag: required"))
	}
	if s.APIServer != "" {
		if _, _, err := net.SplitHostPort(s.APIServer); err != nil {
			errs = append(errs, fmt.Errorf("operator: Settings.APIServer %q: want host:port", s.APIServer))
		}
	}
	for _, d := range []struct{ name, dir string }{{"KubeletPodsDir", s.KubeletPodsDir}, {"HandlerStateDir", s.HandlerStateDir}} {
		if d.dir != "" && !path.IsAbs(d.dir) {
			errs = append(errs, fmt.Errorf("operator: Settings.%s %q: must be absolute", d.name, d.dir))
		}
	}
	if s.WebhookURL != "" {
		if err := checkWebhookURL(s.WebhookURL); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Target is what one KubeVirt CR asks the operator to install: the
// settings with the CR's image registry, tag and pull policy over them.
type Target struct {
	Registry, Tag string
	PullPolicy    corev1.PullPolicy
}

// TargetOf returns the images kv asks for.
func TargetOf(kv *virtv1.KubeVirt, s Settings) Target {
	t := Target{Registry: s.Registry, Tag: s.Tag, PullPolicy: kv.Spec.ImagePullPolicy}
	if kv.Spec.ImageRegistry != "" {
		t.Registry = kv.Spec.ImageRegistry
	}
	if kv.Spec.ImageTag != "" {
		t.Tag = kv.Spec.ImageTag
	}
	return t
}

// Image is the reference of the named daemon's image: REGISTRY/NAME:TAG,
// or REGISTRY/NAME@TAG for a digest ("sha256:...").
func (t Target) Image(name string) string {
	sep := ":"
	if strings.Contains(t.Tag, ":") {
		sep = "@"
	}
	return strings.TrimSuffix(t.Registry, "/") + "/" + name + sep + t.Tag
}
