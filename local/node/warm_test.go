package node_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/node/nodefake"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func TestWarmCapabilitiesRunsTheProbeAsALauncher(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(p *nodefake.Process)
		cancel  bool
		wantErr string
	}{
		{name: "the probe works", end: func(p *nodefake.Process) { p.Exit(0) }},
		{name: "the probe fails", end: func(p *nodefake.Process) {
			_, _ = p.Spec.Log.WriteString("virt-launcher: host CPU probe: libvirtd did not start\n")
			p.Exit(3)
		}, wantErr: "code 3: virt-launcher: host CPU probe: libvirtd did not start"},
		{name: "the caller gives up", cancel: true, wantErr: context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := nodefake.NewRunner(t.TempDir())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- node.WarmCapabilities(ctx, r, "/opt/bin/virt-launcher", "/data/cache/libvirt", []string{"/opt/bin"})
			}()
			var p *nodefake.Process
			select {
			case p = <-r.Started():
			case <-time.After(10 * time.Second):
				t.Fatal("no probe started")
			}
			spec := p.Spec
			if spec.User == nil || spec.User.UID != contract.QEMUUser || spec.User.GID != contract.QEMUGroup || !spec.User.NoNewPrivs {
				t.Errorf("runs as %+v, want the qemu user and group without privileges to gain", spec.User)
			}
			args := strings.Join(spec.Args, " ")
			for _, want := range []string{"--" + contract.FlagProbeHostCPU + " ", "--" + contract.FlagVirtType + " " + contract.VirtTypeQEMU, "--" + contract.FlagLibvirtCacheDir + " " + contract.CapabilitiesCachePath} {
				if !strings.Contains(args, want) {
					t.Errorf("args %q lack %q", args, want)
				}
			}
			if spec.Path != "/opt/bin/virt-launcher" || spec.NetNS != "" {
				t.Errorf("path %q, netns %q: want the launcher in the host's network", spec.Path, spec.NetNS)
			}
			if !slices.Contains(spec.Mounts, node.Mount{Source: "/data/cache/libvirt", Target: contract.CapabilitiesCachePath}) {
				t.Errorf("mounts %+v: the cache is not where launcher pods see it", spec.Mounts)
			}
			if !slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=/opt/bin:") }) {
				t.Errorf("env %q: the binary folder is not first on PATH", spec.Env)
			}
			if tc.cancel {
				cancel()
			} else {
				tc.end(p)
			}
			err := <-done
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if tc.cancel {
				if !errors.Is(err, context.Canceled) || len(r.Killed()) != 1 {
					t.Errorf("error %v, killed %v: want the probe killed", err, r.Killed())
				}
			}
		})
	}
}
