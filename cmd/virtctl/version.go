package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/virtkit/virtkit/virtapi/subresources"
)

func versionCommand() command {
	return command{name: "version", use: "version", short: "Print the client's and the server's (virt-api's) version.", args: 0,
		example: "  # Print both versions:\n  virtctl version\n  # Only this binary's, no cluster needed:\n  virtctl version --client",
		setup: func(fs *pflag.FlagSet) action {
			clientOnly := fs.BoolP("client", "c", false, "Client version only (no server required).")
			return func(ctx context.Context, s *session, _ []string) error {
				fmt.Fprintf(s.stdout, "Client Version: %s\n", formatVersion(s.version))
				if *clientOnly {
					return nil
				}
				if err := s.connect(); err != nil {
					return err
				}
				v, err := s.sub.Version(ctx)
				if err != nil {
					return &explained{msg: fmt.Sprintf("cannot read the server version: %v", err), hint: s.hint(op{verb: "version"}, err), err: err}
				}
				fmt.Fprintf(s.stdout, "Server Version: %s\n", formatVersion(v))
				return nil
			}
		}}
}

// formatVersion prints v as KubeVirt's virtctl does (Go's %#v of its
// version.Info), so scripts reading it keep working.
func formatVersion(v subresources.VersionInfo) string {
	return fmt.Sprintf("version.Info{GitVersion:%q, GitCommit:%q, GitTreeState:%q, BuildDate:%q, GoVersion:%q, Compiler:%q, Platform:%q}",
		v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Compiler, v.Platform)
}
