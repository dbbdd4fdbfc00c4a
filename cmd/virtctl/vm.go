package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	virtv1 "kubevirt.io/api/core/v1"
)

// The flags start, stop and restart share with KubeVirt's virtctl.
const (
	dryRunUsage      = "If true, the request is checked by the server and nothing is changed."
	forceUsage       = "Only used with --grace-period=0: delete the VMI's pod at once, bypassing graceful shutdown (may lose data)."
	gracePeriodUsage = "Seconds the VMI is given to shut down gracefully; needs --force. Currently only 0 is supported for restart."
)

// errForceGrace is KubeVirt's refusal of --force without --grace-period and
// the reverse.
//
//lint:ignore ST1005 KubeVirt's wording, which scripts may match
var errForceGrace = errors.New("Must both use --force=true and set --grace-period.")

// scheduled makes one API call for o and reports it as KubeVirt's virtctl
// does ("VM tiny was scheduled to start").
func (s *session) scheduled(o op, call func() error) error {
	if err := call(); err != nil {
		return s.explain(o, err)
	}
	fmt.Fprintf(s.stdout, "%s %s was scheduled to %s\n", o.short(), o.name, o.verb)
	return nil
}

func startCommand() command {
	return command{name: "start", use: "start (VM)", short: "Start a virtual machine.", args: 1,
		example: "  # Start the virtual machine 'tiny':\n  virtctl start tiny\n  # Start it with its vCPUs paused:\n  virtctl start tiny --paused",
		setup: func(fs *pflag.FlagSet) action {
			paused := fs.Bool("paused", false, "If true, start the virtual machine paused.")
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.StartOptions{Paused: *paused, DryRun: s.dryRun(*dry)}
				return s.scheduled(op{"start", kindVM, args[0]}, func() error { return s.sub.Start(ctx, s.ns, args[0], opts) })
			}
		}}
}

func stopCommand() command {
	return command{name: "stop", use: "stop (VM)", short: "Stop a virtual machine.", args: 1,
		example: "  # Stop the virtual machine 'tiny' gracefully:\n  virtctl stop tiny\n  # Stop it now, without waiting for the guest:\n  virtctl stop tiny --force --grace-period=0",
		setup: forcedVerb("stop", func(ctx context.Context, s *session, name string, dry []string, grace *int64) error {
			return s.sub.Stop(ctx, s.ns, name, virtv1.StopOptions{DryRun: dry, GracePeriod: grace})
		})}
}

func restartCommand() command {
	return command{name: "restart", use: "restart (VM)", short: "Restart a virtual machine.", args: 1,
		example: "  # Restart the virtual machine 'tiny':\n  virtctl restart tiny\n  # Restart it at once, deleting its pod:\n  virtctl restart tiny --force --grace-period=0",
		setup: forcedVerb("restart", func(ctx context.Context, s *session, name string, dry []string, grace *int64) error {
			return s.sub.Restart(ctx, s.ns, name, virtv1.RestartOptions{DryRun: dry, GracePeriodSeconds: grace})
		})}
}

// forcedVerb is the flag handling stop and restart share, as KubeVirt's
// virtctl has it: --force and --grace-period go together (the grace period
// is sent only then, else nil), and --dry-run. call sends the verb.
func forcedVerb(verb string, call func(ctx context.Context, s *session, name string, dry []string, grace *int64) error) func(*pflag.FlagSet) action {
	return func(fs *pflag.FlagSet) action {
		force := fs.Bool("force", false, forceUsage)
		grace := fs.Int64("grace-period", -1, gracePeriodUsage)
		dry := fs.Bool("dry-run", false, dryRunUsage)
		return func(ctx context.Context, s *session, args []string) error {
			if fs.Changed("grace-period") != *force {
				return &usageError{cmd: verb, err: errForceGrace}
			}
			if err := s.connect(); err != nil {
				return err
			}
			var g *int64
			if *force {
				g = grace
			}
			return s.scheduled(op{verb, kindVM, args[0]}, func() error { return call(ctx, s, args[0], s.dryRun(*dry), g) })
		}
	}
}
