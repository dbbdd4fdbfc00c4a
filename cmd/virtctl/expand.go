package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// maxVMFile bounds the VM manifest `expand --file` reads.
const maxVMFile = 3 << 20

// expandCommand is KubeVirt's `virtctl expand`: a VM with its instancetype
// and preference written into its template, as virt-api expands it.
func expandCommand() command {
	return command{name: "expand", use: "expand (--vm NAME | --file FILE)",
		short: "Print a VM with its instancetype and preference written into its template.",
		example: "  # The stored VM 'sized', expanded:\n  virtctl expand --vm sized\n" +
			"  # A manifest, expanded without storing it, as JSON:\n  virtctl expand --file vm.yaml --output json",
		setup: func(fs *pflag.FlagSet) action {
			vmName := fs.String("vm", "", "Name of the stored VirtualMachine to expand.")
			file := fs.StringP("file", "f", "", "A VirtualMachine manifest (YAML or JSON) to expand; - reads standard input.")
			output := fs.StringP("output", "o", "yaml", "Output format: yaml or json.")
			return func(ctx context.Context, s *session, _ []string) error {
				if (*vmName == "") == (*file == "") {
					return &usageError{cmd: "expand", err: fmt.Errorf("give one of --vm and --file")}
				}
				if *output != "yaml" && *output != "json" {
					return &usageError{cmd: "expand", err: fmt.Errorf("--output %q: yaml or json", *output)}
				}
				var vm *virtv1.VirtualMachine
				if *file != "" {
					var err error
					if vm, err = s.readVM(*file); err != nil {
						return &usageError{cmd: "expand", err: err}
					}
				}
				if err := s.connect(); err != nil {
					return err
				}
				var out *virtv1.VirtualMachine
				var err error
				if vm == nil {
					out, err = s.sub.ExpandSpec(ctx, s.ns, *vmName)
					if err != nil {
						return s.explain(op{"expand", kindVM, *vmName}, err)
					}
				} else {
					if out, err = s.sub.ExpandVMSpec(ctx, s.ns, vm); err != nil {
						return s.explain(op{"expand", kindVM, vm.Name}, err)
					}
				}
				if *output == "json" {
					b, err := json.MarshalIndent(out, "", "  ")
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(s.stdout, "%s\n", b)
					return err
				}
				return s.printYAML(out)
			}
		}}
}

// readVM reads a VirtualMachine manifest from path (- is standard input).
func (s *session) readVM(path string) (*virtv1.VirtualMachine, error) {
	var r io.Reader = s.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxVMFile+1))
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	if len(b) > maxVMFile {
		return nil, fmt.Errorf("--file %s: larger than 3 MiB", path)
	}
	vm := &virtv1.VirtualMachine{}
	if err := yaml.UnmarshalStrict(b, vm); err != nil {
		return nil, fmt.Errorf("--file %s: not a VirtualMachine: %w", path, err)
	}
	if vm.Kind != "VirtualMachine" {
		return nil, fmt.Errorf("--file %s: kind %q, want VirtualMachine", path, vm.Kind)
	}
	return vm, nil
}
