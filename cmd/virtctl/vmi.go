package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	virtv1 "kubevirt.io/api/core/v1"
)

// pauseTarget reads KubeVirt's "vm|vmi" argument of pause and unpause. Both
// act on the VMI, whose name is the VM's.
func pauseTarget(cmd, typ string) error {
	switch strings.ToLower(typ) {
	case "vm", "vms", "virtualmachine", "virtualmachines", "vmi", "vmis", "virtualmachineinstance", "virtualmachineinstances":
		return nil
	}
	return &usageError{cmd: cmd, err: fmt.Errorf("unknown resource type %q: use vm or vmi, as in 'virtctl %s vm NAME'", typ, cmd)}
}

func pauseCommand() command {
	return command{name: "pause", use: "pause vm|vmi (VM)|(VMI)", short: "Pause a virtual machine: its vCPUs stop, its memory is kept.", args: 2,
		example: "  # Pause the virtual machine 'tiny':\n  virtctl pause vm tiny",
		setup: func(fs *pflag.FlagSet) action {
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if err := pauseTarget("pause", args[0]); err != nil {
					return err
				}
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.PauseOptions{DryRun: s.dryRun(*dry)}
				return s.scheduled(op{"pause", kindVMI, args[1]}, func() error { return s.sub.Pause(ctx, s.ns, args[1], opts) })
			}
		}}
}

func unpauseCommand() command {
	return command{name: "unpause", use: "unpause vm|vmi (VM)|(VMI)", short: "Unpause a paused virtual machine.", args: 2,
		example: "  # Unpause the virtual machine 'tiny':\n  virtctl unpause vm tiny",
		setup: func(fs *pflag.FlagSet) action {
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if err := pauseTarget("unpause", args[0]); err != nil {
					return err
				}
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.UnpauseOptions{DryRun: s.dryRun(*dry)}
				return s.scheduled(op{"unpause", kindVMI, args[1]}, func() error { return s.sub.Unpause(ctx, s.ns, args[1], opts) })
			}
		}}
}

func softRebootCommand() command {
	return command{name: "soft-reboot", use: "soft-reboot (VMI)", short: "Ask a virtual machine's guest to reboot (ACPI or guest agent).", args: 1,
		example: "  # Reboot the guest of 'tiny':\n  virtctl soft-reboot tiny",
		setup: func(*pflag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				return s.scheduled(op{"soft-reboot", kindVMI, args[0]}, func() error { return s.sub.SoftReboot(ctx, s.ns, args[0]) })
			}
		}}
}

func resetCommand() command {
	return command{name: "reset", use: "reset (VMI)", short: "Reset a virtual machine instance: its guest restarts at once, without shutting down.", args: 1,
		example: "  # Reset the guest of 'tiny':\n  virtctl reset tiny",
		setup: func(*pflag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				return s.scheduled(op{"reset", kindVMI, args[0]}, func() error { return s.sub.Reset(ctx, s.ns, args[0]) })
			}
		}}
}
