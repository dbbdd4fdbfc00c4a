package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// forwardExport forwards localPort ("0": any) on loopback to the pod behind
// the export's Service, at the port its HTTPS port targets, as KubeVirt's
// virtctl --port-forward does. It returns the local host:port and what
// stops the forward.
func forwardExport(ctx context.Context, s *session, vme *exportv1.VirtualMachineExport, localPort string) (string, func(), error) {
	if vme.Status == nil || vme.Status.ServiceName == "" {
		return "", nil, fmt.Errorf("VirtualMachineExport %s/%s names no Service to forward to", s.ns, vme.Name)
	}
	svc := &corev1.Service{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: vme.Status.ServiceName}, svc); err != nil {
		return "", nil, fmt.Errorf("reading the export's Service %s/%s: %w", s.ns, vme.Status.ServiceName, err)
	}
	var pods corev1.PodList
	if err := s.kube.List(ctx, &pods, client.InNamespace(s.ns), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return "", nil, fmt.Errorf("listing the pods of Service %s/%s: %w", s.ns, svc.Name, err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning && pods.Items[i].DeletionTimestamp == nil {
			pod = &pods.Items[i]
			break
		}
	}
	if pod == nil {
		return "", nil, fmt.Errorf("no running pod behind the export's Service %s/%s", s.ns, svc.Name)
	}
	target, err := targetPort(svc, pod)
	if err != nil {
		return "", nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(s.cfg)
	if err != nil {
		return "", nil, err
	}
	u, err := url.Parse(s.cfg.Host)
	if err != nil {
		return "", nil, err
	}
	u.Path, err = url.JoinPath(u.Path, "api/v1/namespaces", s.ns, "pods", pod.Name, "portforward")
	if err != nil {
		return "", nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{localPort + ":" + strconv.Itoa(target)}, stop, ready, io.Discard, s.stderr)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: %w", s.ns, pod.Name, err)
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: %w", s.ns, pod.Name, err)
	case <-ctx.Done():
		close(stop)
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stop)
		return "", nil, fmt.Errorf("port-forward to pod %s/%s: %w", s.ns, pod.Name, errors.Join(err, errors.New("no local port")))
	}
	fmt.Fprintf(s.stderr, "forwarding 127.0.0.1:%d to pod %s port %d\n", ports[0].Local, pod.Name, target)
	return "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)), func() { close(stop) }, nil
}

// targetPort is the pod port that svc's HTTPS port (443, else its first)
// targets.
func targetPort(svc *corev1.Service, pod *corev1.Pod) (int, error) {
	if len(svc.Spec.Ports) == 0 {
		return 0, fmt.Errorf("the export's Service %s has no port", svc.Name)
	}
	sp := svc.Spec.Ports[0]
	for _, p := range svc.Spec.Ports {
		if p.Port == 443 {
			sp = p
		}
	}
	switch t := sp.TargetPort; {
	case t.Type == intstr.Int && t.IntVal != 0:
		return int(t.IntVal), nil
	case t.Type == intstr.String && t.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == t.StrVal {
					return int(cp.ContainerPort), nil
				}
			}
		}
		return 0, fmt.Errorf("pod %s has no port named %q (the export's Service's target)", pod.Name, t.StrVal)
	}
	return int(sp.Port), nil
}

// linkHost is the host name of the link's URLs: the name the export
// server's certificate holds.
func linkHost(link *exportv1.VirtualMachineExportLink) (string, error) {
	raw := ""
	for _, v := range link.Volumes {
		if len(v.Formats) > 0 {
			raw = v.Formats[0].Url
			break
		}
	}
	if raw == "" && len(link.Manifests) > 0 {
		raw = link.Manifests[0].Url
	}
	if raw == "" {
		return "", errors.New("the export's internal links name no URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("the export's link %q: %w", raw, err)
	}
	return u.Hostname(), nil
}
