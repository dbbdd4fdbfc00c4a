package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"
)

// agentCommand is one of KubeVirt's commands that print what a VMI's guest
// agent says, as indented JSON: guestosinfo, userlist, fslist.
func agentCommand(name, short string, get func(ctx context.Context, s *session, vmi string) (any, error)) command {
	return command{name: name, use: name + " (VMI)", short: short, args: 1,
		example: "  # " + short + "\n  virtctl " + name + " tiny",
		setup: func(*pflag.FlagSet) action {
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				v, err := get(ctx, s, args[0])
				if err != nil {
					return s.explain(op{"read the guest agent's " + name + " of", kindVMI, args[0]}, err)
				}
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(s.stdout, "%s\n", b)
				return nil
			}
		}}
}

func guestOSInfoCommand() command {
	return agentCommand("guestosinfo", "Print what the guest agent says of the guest: OS, host name, time zone, users, file systems.",
		func(ctx context.Context, s *session, vmi string) (any, error) {
			return s.sub.GuestOSInfo(ctx, s.ns, vmi)
		})
}

func userListCommand() command {
	return agentCommand("userlist", "Print the users logged in to the guest, from its agent.",
		func(ctx context.Context, s *session, vmi string) (any, error) { return s.sub.UserList(ctx, s.ns, vmi) })
}

func fsListCommand() command {
	return agentCommand("fslist", "Print the file systems mounted in the guest, from its agent.",
		func(ctx context.Context, s *session, vmi string) (any, error) {
			return s.sub.FilesystemList(ctx, s.ns, vmi)
		})
}
