package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// evacuateCancelCommand clears the evacuation mark a drain left, as
// KubeVirt's virtctl does: on a VM's VMI, a VMI, or every VMI marked for
// a node (in every namespace), through the evacuatecancel subresource.
func evacuateCancelCommand() command {
	return command{name: "evacuate-cancel", use: "evacuate-cancel (vm|vmi|node)/NAME", short: "Cancel the evacuation of a virtual machine, or of every one a node drain marked.", args: 1,
		example: "  # Stop moving the virtual machine 'tiny' off its drained node:\n  virtctl evacuate-cancel vm/tiny\n" +
			"  # The same for every VMI a drain of node-b marked:\n  virtctl evacuate-cancel node/node-b",
		setup: func(fs *pflag.FlagSet) action {
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				kind, name, ok := strings.Cut(args[0], "/")
				if !ok || name == "" {
					return &explained{msg: fmt.Sprintf("target must contain type and name separated by '/': %q", args[0]),
						hint: "Name it as vm/NAME, vmi/NAME or node/NAME."}
				}
				if kind != "vm" && kind != "vmi" && kind != "node" {
					return &explained{msg: fmt.Sprintf("unsupported resource type '%s'", kind),
						hint: "evacuate-cancel takes vm/NAME, vmi/NAME or node/NAME."}
				}
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.EvacuateCancelOptions{DryRun: s.dryRun(*dry)}
				switch kind {
				case "vm":
					o := op{"evacuate-cancel", kindVM, name}
					if err := s.sub.EvacuateCancel(ctx, s.ns, name, opts); err != nil {
						return s.explain(o, err)
					}
					fmt.Fprintf(s.stdout, "VM %s/%s was canceled evacuation\n", s.ns, name)
				case "vmi":
					o := op{"evacuate-cancel", kindVMI, name}
					if err := s.sub.EvacuateCancelVMI(ctx, s.ns, name, opts); err != nil {
						return s.explain(o, err)
					}
					fmt.Fprintf(s.stdout, "VMI %s/%s was canceled evacuation\n", s.ns, name)
				case "node":
					return s.evacuateCancelNode(ctx, name, opts)
				}
				return nil
			}
		}}
}

// evacuateCancelNode cancels the evacuation of every VMI whose mark names
// node, in every namespace.
func (s *session) evacuateCancelNode(ctx context.Context, node string, opts virtv1.EvacuateCancelOptions) error {
	if err := s.kube.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{}); err != nil {
		return &explained{msg: fmt.Sprintf("cannot evacuate-cancel node %s: %v", node, err), err: err,
			hint: "`kubectl get nodes` lists the nodes."}
	}
	var vmis virtv1.VirtualMachineInstanceList
	if err := s.kube.List(ctx, &vmis); err != nil {
		return &explained{msg: fmt.Sprintf("cannot evacuate-cancel node %s: listing VirtualMachineInstances: %v", node, err), err: err}
	}
	for i := range vmis.Items {
		v := &vmis.Items[i]
		if v.Status.EvacuationNodeName != node {
			continue
		}
		if err := s.sub.EvacuateCancelVMI(ctx, v.Namespace, v.Name, opts); err != nil {
			return &explained{msg: fmt.Sprintf("cannot evacuate-cancel VirtualMachineInstance %s/%s: %v", v.Namespace, v.Name, err), err: err}
		}
		fmt.Fprintf(s.stdout, "VMI %s/%s was canceled evacuation\n", v.Namespace, v.Name)
	}
	return nil
}
