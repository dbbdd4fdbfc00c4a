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
)

func TestRunOneOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(p *nodefake.Process)
		cancel  bool
		wantErr string
	}{
		{name: "it works", end: func(p *nodefake.Process) { p.Exit(0) }},
		{name: "it fails", end: func(p *nodefake.Process) {
			_, _ = p.Spec.Log.WriteString("probe: libvirtd did not start\n")
			p.Exit(3)
		}, wantErr: "code 3: probe: libvirtd did not start"},
		{name: "the caller gives up", cancel: true, wantErr: context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := nodefake.NewRunner(t.TempDir())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			user := &node.Identity{UID: 107, GID: 107, Groups: []uint32{107}, NoNewPrivs: true}
			cache := node.Mount{Source: "/data/cache", Target: "/var/cache/x"}
			done := make(chan error, 1)
			go func() {
				done <- node.RunOneOff(ctx, r, node.OneOff{Path: "/opt/bin/tool", Args: []string{"--flag", "v"},
					User: user, Mounts: []node.Mount{cache}, BinDirs: []string{"/opt/bin"}})
			}()
			var p *nodefake.Process
			select {
			case p = <-r.Started():
			case <-time.After(10 * time.Second):
				t.Fatal("nothing started")
			}
			spec := p.Spec
			if spec.User != user || spec.NetNS != "" {
				t.Errorf("user %+v, netns %q: want the given user in the host's network", spec.User, spec.NetNS)
			}
			if got := strings.Join(spec.Args, " "); got != "/opt/bin/tool --flag v" || spec.Path != "/opt/bin/tool" {
				t.Errorf("path %q, argv %q", spec.Path, got)
			}
			if !slices.Contains(spec.Mounts, cache) {
				t.Errorf("mounts %+v lack %+v", spec.Mounts, cache)
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
			if tc.cancel && (!errors.Is(err, context.Canceled) || len(r.Killed()) != 1) {
				t.Errorf("error %v, killed %v: want it killed", err, r.Killed())
			}
		})
	}
}
