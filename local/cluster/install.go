package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/local/controlplane"
)

// virtAPICert names virt-api's serving certificate in the cluster's PKI.
const virtAPICert = "virt-api"

// install puts what virtkit needs into the cluster: the CRDs, the
// namespace with a KubeVirt CR asking for software emulation (left as it is
// when it exists), and virt-api's registration (its Service, the
// APIService, the webhooks, the ClusterRoles), then waits for the default
// service account. Installing again changes nothing.
func install(ctx context.Context, cl client.Client, cfg Config, pki controlplane.PKI) error {
	crds, err := deploy.CRDs()
	if err != nil {
		return err
	}
	objs := make([]client.Object, 0, len(crds))
	for _, c := range crds {
		objs = append(objs, c)
	}
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		return err
	}
	if err := deploy.WaitEstablished(ctx, cl, crds); err != nil {
		return err
	}
	if err := deploy.Apply(ctx, cl, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return err
	}
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: Namespace},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{
			// This machine may have no usable /dev/kvm; emulation is chosen, never probed.
			DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true}}}}
	if err := cl.Create(ctx, kv); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cluster: KubeVirt CR: %w", err)
	}
	if err := pki.EnsureServingCert(virtAPICert, "virt-api."+Namespace+".svc"); err != nil {
		return err
	}
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	api, err := deploy.VirtAPIObjects(cfg.virtAPI(ca))
	if err != nil {
		return err
	}
	if err := deploy.Apply(ctx, cl, api...); err != nil {
		return err
	}
	return waitDefaultServiceAccount(ctx, cl)
}

// waitDefaultServiceAccount waits for the default namespace's service
// account, which kube-controller-manager makes a few seconds after a fresh
// start: until then every pod there is refused, and the first VM of a new
// cluster would show a failed launcher pod create.
func waitDefaultServiceAccount(ctx context.Context, cl client.Client) error {
	for {
		err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for service account default/default: %w (last: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// virtAPI says where the apiserver finds virt-api: in this process, on
// loopback, behind an ExternalName Service to localhost; or, with a real
// node, in virt-api's pod on that node, behind a Service that selects it
// (the apiserver then routes to the pod's address: apiServerFlags).
func (c Config) virtAPI(ca []byte) deploy.VirtAPI {
	v := deploy.VirtAPI{Namespace: Namespace, Service: deploy.APIName, Port: int32(c.VirtAPIPort), CABundle: ca}
	if c.KubeletNode == "" {
		v.ExternalName = "localhost"
		return v
	}
	v.Port, v.TargetPort = 443, int32(c.VirtAPIPort)
	return v
}

// apiServerFlags are the apiserver's flags beyond the control plane's
// own. With a real node, virt-api is a pod behind a Service, and no
// kube-proxy routes the Service's address: the apiserver calls the
// Service's endpoints (the pods) instead, for the APIService and the
// webhooks alike.
func (c Config) apiServerFlags() []string {
	if c.KubeletNode == "" {
		return nil
	}
	return []string{"--enable-aggregator-routing=true"}
}

// webhookClientHosts are virt-api's webhook hosts as the apiserver names
// them: the apiserver presents its front-proxy client certificate there,
// and only calls that carry it may start an evacuation.
func (c Config) webhookClientHosts() []string {
	v := c.virtAPI(nil)
	host := v.Service + "." + v.Namespace + ".svc"
	if v.Port == 443 {
		return []string{host, host + ":443"}
	}
	return []string{host + ":" + strconv.Itoa(int(v.Port))}
}
