package controlplane

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// component is one process of the control plane.
type component struct {
	name string
	args []string
}

// components returns the four processes with their flags, in start order.
func components(c Config) []component {
	p := c.PKI()
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(c.EtcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPort+1)
	etcd := component{name: "etcd", args: []string{
		"--name=virt-local",
		"--data-dir=" + filepath.Join(c.DataDir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=virt-local=" + peerURL,
		"--listen-metrics-urls=http://127.0.0.1:" + strconv.Itoa(c.EtcdPort+2),
		"--cert-file=" + p.Cert("apiserver"),
		"--key-file=" + p.Key("apiserver"),
		"--client-cert-auth=true",
		"--trusted-ca-file=" + p.CACert(),
		"--quota-backend-bytes=" + strconv.Itoa(2<<30),
		"--unsafe-no-fsync=false",
	}}
	apiserver := component{name: "kube-apiserver", args: append([]string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback address cannot back the kubernetes service endpoints;
		// nothing in a local cluster reaches the apiserver through them.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(c.APIServerPort),
		"--etcd-servers=" + etcdURL,
		"--etcd-cafile=" + p.CACert(),
		"--etcd-certfile=" + p.Cert("apiserver-etcd-client"),
		"--etcd-keyfile=" + p.Key("apiserver-etcd-client"),
		"--tls-cert-file=" + p.Cert("apiserver"),
		"--tls-private-key-file=" + p.Key("apiserver"),
		"--client-ca-file=" + p.CACert(),
		"--service-account-key-file=" + p.ServiceAccountPub(),
		"--service-account-signing-key-file=" + p.ServiceAccountKey(),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=" + c.ServiceCIDR,
		// Node authorizes kubelets (system:node:NAME) for their own node's
		// objects only, as a real cluster does; NodeRestriction keeps them
		// from editing other nodes.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		// Towards kubelets: the apiserver's client certificate, and the
		// node's InternalIP (a local kubelet's hostname need not resolve).
		"--kubelet-client-certificate=" + p.Cert(KubeletClientCert),
		"--kubelet-client-key=" + p.Key(KubeletClientCert),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		// The aggregator's identity for aggregated APIs (virt-api's
		// subresources.kubevirt.io), as kubeadm sets it up.
		"--requestheader-client-ca-file=" + p.FrontProxyCACert(),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.Cert(FrontProxyClientCert),
		"--proxy-client-key-file=" + p.Key(FrontProxyClientCert),
	}, c.APIServerFlags...)}
	if len(c.WebhookClientHosts) > 0 {
		apiserver.args = append(apiserver.args, "--admission-control-config-file="+admissionConfigPath(c))
	}
	scheduler := component{name: "kube-scheduler", args: []string{
		"--kubeconfig=" + kubeconfigPath(c, "scheduler"),
		"--authentication-kubeconfig=" + kubeconfigPath(c, "scheduler"),
		"--authorization-kubeconfig=" + kubeconfigPath(c, "scheduler"),
		"--leader-elect=false",
		"--secure-port=0",
	}}
	cm := component{name: "kube-controller-manager", args: []string{
		"--kubeconfig=" + kubeconfigPath(c, "controller-manager"),
		"--authentication-kubeconfig=" + kubeconfigPath(c, "controller-manager"),
		"--authorization-kubeconfig=" + kubeconfigPath(c, "controller-manager"),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.ServiceAccountKey(),
		"--root-ca-file=" + p.CACert(),
		"--cluster-signing-cert-file=" + p.CACert(),
		"--cluster-signing-key-file=" + p.CAKey(),
		"--service-cluster-ip-range=" + c.ServiceCIDR,
		"--controllers=*,-node-ipam-controller",
	}}
	return []component{etcd, apiserver, scheduler, cm}
}

func kubeconfigPath(c Config, user string) string {
	return filepath.Join(c.DataDir, fmt.Sprintf("%s.kubeconfig", user))
}
