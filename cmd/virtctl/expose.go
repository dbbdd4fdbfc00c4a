package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
)

// exposeFlags are the Service's settings from the command line, KubeVirt's.
type exposeFlags struct {
	name, clusterIP, externalIP        string
	port                               int32
	protocol, targetPort, serviceType  string
	portName, ipFamily, ipFamilyPolicy string
}

func exposeCommand() command {
	return command{name: "expose", use: "expose vm|vmi|vmirs (NAME)", args: 2,
		short: "Make a Service for a virtual machine, virtual machine instance or replica set.",
		example: "  # Expose SSH of VM 'tiny' on every node through a NodePort Service:\n  virtctl expose vm tiny --port=22 --name=tiny-ssh --type=NodePort\n" +
			"  # Expose port 8080 of the guests of replica set 'web' as port 80:\n  virtctl expose vmirs web --port=80 --target-port=8080 --name=web",
		setup: func(fs *pflag.FlagSet) action {
			var f exposeFlags
			fs.StringVar(&f.name, "name", "", "Name of the Service. Required.")
			fs.StringVar(&f.clusterIP, "cluster-ip", "", "ClusterIP of the Service: empty allocates one, None makes a headless Service.")
			fs.StringVar(&f.externalIP, "external-ip", "", "An external IP address the Service also accepts.")
			fs.Int32Var(&f.port, "port", 0, "Port the Service serves on; without it, the ports the guest's pod-network interface declares.")
			fs.StringVar(&f.protocol, "protocol", "TCP", "Protocol of --port: TCP or UDP.")
			fs.StringVar(&f.targetPort, "target-port", "", "Name or number of the guest's port the Service sends to; defaults to --port.")
			fs.StringVar(&f.serviceType, "type", "ClusterIP", "Type of the Service: ClusterIP, NodePort or LoadBalancer.")
			fs.StringVar(&f.portName, "port-name", "", "Name of the Service's port.")
			fs.StringVar(&f.ipFamily, "ip-family", "", "IP families: IPv4, IPv6, IPv4,IPv6 or IPv6,IPv4.")
			fs.StringVar(&f.ipFamilyPolicy, "ip-family-policy", "", "SingleStack, PreferDualStack or RequireDualStack.")
			return func(ctx context.Context, s *session, args []string) error {
				svc, err := f.service()
				if err != nil {
					return &usageError{cmd: "expose", err: err}
				}
				if err := s.connect(); err != nil {
					return err
				}
				svc.Namespace = s.ns
				if err := s.exposeTarget(ctx, svc, args[0], args[1], f); err != nil {
					return err
				}
				if err := s.kube.Create(ctx, svc); err != nil {
					return fmt.Errorf("creating Service %s/%s: %w", s.ns, svc.Name, err)
				}
				fmt.Fprintf(s.stdout, "Service %s successfully created for %s %s\n", svc.Name, strings.ToLower(args[0]), args[1])
				return nil
			}
		}}
}

// service is the Service the flags describe, without selector, ports or
// owner.
func (f exposeFlags) service() (*corev1.Service, error) {
	if f.name == "" {
		return nil, errors.New("--name is required: the name of the Service to create")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: f.name}, Spec: corev1.ServiceSpec{ClusterIP: f.clusterIP}}
	switch strings.ToLower(f.serviceType) {
	case "clusterip":
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	case "nodeport":
		svc.Spec.Type = corev1.ServiceTypeNodePort
	case "loadbalancer":
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	default:
		return nil, fmt.Errorf("--type %q: use ClusterIP, NodePort or LoadBalancer", f.serviceType)
	}
	switch strings.ToLower(f.ipFamily) {
	case "":
	case "ipv4":
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	case "ipv6":
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	case "ipv4,ipv6":
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	case "ipv6,ipv4":
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	default:
		return nil, fmt.Errorf("--ip-family %q: use IPv4, IPv6, IPv4,IPv6 or IPv6,IPv4", f.ipFamily)
	}
	switch strings.ToLower(f.ipFamilyPolicy) {
	case "":
		if len(svc.Spec.IPFamilies) > 1 {
			svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
		}
	case "singlestack":
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	case "preferdualstack":
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyPreferDualStack)
	case "requiredualstack":
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	default:
		return nil, fmt.Errorf("--ip-family-policy %q: use SingleStack, PreferDualStack or RequireDualStack", f.ipFamilyPolicy)
	}
	if f.externalIP != "" {
		svc.Spec.ExternalIPs = []string{f.externalIP}
	}
	if f.port != 0 {
		var proto corev1.Protocol
		switch strings.ToLower(f.protocol) {
		case "tcp":
			proto = corev1.ProtocolTCP
		case "udp":
			proto = corev1.ProtocolUDP
		default:
			return nil, fmt.Errorf("--protocol %q: use TCP or UDP", f.protocol)
		}
		svc.Spec.Ports = []corev1.ServicePort{{Name: f.portName, Protocol: proto, Port: f.port, TargetPort: intstr.Parse(f.targetPort)}}
		if f.targetPort == "" {
			svc.Spec.Ports[0].TargetPort = intstr.FromInt32(f.port)
		}
	}
	return svc, nil
}

// exposeTarget reads the object exposed and gives svc its selector, its
// ports when --port did not, and the object as its owner, as KubeVirt's
// virtctl does: launcher pods are selected by vmi.kubevirt.io/id, a
// replica set's by its matchLabels.
func (s *session) exposeTarget(ctx context.Context, svc *corev1.Service, typ, name string, f exposeFlags) error {
	var (
		obj      client.Object
		gvk      schema.GroupVersionKind
		template func() *virtv1.VirtualMachineInstanceSpec
	)
	switch strings.ToLower(typ) {
	case "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
		vmi := &virtv1.VirtualMachineInstance{}
		obj, gvk = vmi, virtv1.VirtualMachineInstanceGroupVersionKind
		template = func() *virtv1.VirtualMachineInstanceSpec { return &vmi.Spec }
		svc.Spec.Selector = map[string]string{virtv1.VirtualMachineInstanceIDLabel: spec.InstanceID(name)}
	case "vm", "vms", "virtualmachine", "virtualmachines":
		vm := &virtv1.VirtualMachine{}
		obj, gvk = vm, virtv1.VirtualMachineGroupVersionKind
		template = func() *virtv1.VirtualMachineInstanceSpec {
			if vm.Spec.Template == nil {
				return nil
			}
			return &vm.Spec.Template.Spec
		}
		svc.Spec.Selector = map[string]string{virtv1.VirtualMachineInstanceIDLabel: spec.InstanceID(name)}
	case "vmirs", "vmirss", "virtualmachineinstancereplicaset", "virtualmachineinstancereplicasets":
		rs := &virtv1.VirtualMachineInstanceReplicaSet{}
		obj, gvk = rs, virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind
		template = func() *virtv1.VirtualMachineInstanceSpec {
			if rs.Spec.Template == nil {
				return nil
			}
			return &rs.Spec.Template.Spec
		}
	default:
		return &usageError{cmd: "expose", err: fmt.Errorf("unsupported resource type %q: use vm, vmi or vmirs", typ)}
	}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, obj); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, s.ns, name, err)
	}
	if rs, ok := obj.(*virtv1.VirtualMachineInstanceReplicaSet); ok {
		switch sel := rs.Spec.Selector; {
		case sel == nil || len(sel.MatchLabels) == 0:
			return fmt.Errorf("cannot expose VirtualMachineInstanceReplicaSet %s/%s: its spec.selector has no matchLabels", s.ns, name)
		case len(sel.MatchExpressions) > 0:
			return fmt.Errorf("cannot expose VirtualMachineInstanceReplicaSet %s/%s: a Service cannot select by its spec.selector.matchExpressions", s.ns, name)
		default:
			svc.Spec.Selector = sel.MatchLabels
		}
	}
	if len(svc.Spec.Ports) == 0 {
		svc.Spec.Ports = podNetworkPorts(template())
	}
	if len(svc.Spec.Ports) == 0 {
		return fmt.Errorf("cannot expose %s %s/%s: no --port, and its pod-network interface declares no ports", gvk.Kind, s.ns, name)
	}
	ref := metav1.NewControllerRef(obj, gvk)
	ref.BlockOwnerDeletion = ptr.To(false)
	svc.OwnerReferences = []metav1.OwnerReference{*ref}
	return nil
}

// podNetworkPorts are the ports the interface on the pod network
// declares, as Service ports port-1, port-2...
func podNetworkPorts(vmi *virtv1.VirtualMachineInstanceSpec) []corev1.ServicePort {
	if vmi == nil {
		return nil
	}
	pod := ""
	for _, n := range vmi.Networks {
		if n.Pod != nil {
			pod = n.Name
			break
		}
	}
	for _, iface := range vmi.Domain.Devices.Interfaces {
		if pod == "" || iface.Name != pod {
			continue
		}
		var ports []corev1.ServicePort
		for i, p := range iface.Ports {
			proto := corev1.Protocol(p.Protocol)
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, corev1.ServicePort{Name: fmt.Sprintf("port-%d", i+1), Protocol: proto, Port: p.Port})
		}
		return ports
	}
	return nil
}
