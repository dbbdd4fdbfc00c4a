package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ssh and scp run the local OpenSSH clients with KubeVirt's ProxyCommand:
// this virtctl's port-forward --stdio to the guest's port, with the
// kubeconfig in use, and the guest named [USER@]TYPE.NAME.NAMESPACE.
func TestSSHAndSCPRunTheLocalClient(t *testing.T) {
	const proxy = "ProxyCommand=/opt/virtctl port-forward --stdio=true --kubeconfig KUBECONFIG "
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"ssh with a user in the target, the context's namespace", "ssh root@vm/tiny",
			[]string{"/usr/bin/ssh", "-o", proxy + "vm/tiny/lab 22", "root@vm.tiny.lab"}},
		{"ssh with -l, a port, options, a key and a command", "ssh -l admin -p 2222 -t '-o StrictHostKeyChecking=no' -i /keys/id vmi/tiny/other --command=uptime",
			[]string{"/usr/bin/ssh", "-o", proxy + "vmi/tiny/other 2222", "-o", "StrictHostKeyChecking=no", "-i", "/keys/id", "admin@vmi.tiny.other", "uptime"}},
		{"scp to the guest, recursive", "scp -r ./dir root@vm/tiny:/tmp",
			[]string{"/usr/bin/scp", "-o", proxy + "vm/tiny/lab 22", "-r", "./dir", "root@vm.tiny.lab:/tmp"}},
		{"scp from the guest, preserving", "scp --preserve root@vmi/tiny/other:/etc/hostname out",
			[]string{"/usr/bin/scp", "-o", proxy + "vmi/tiny/other 22", "-p", "root@vmi.tiny.other:/etc/hostname", "out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "lab")
			d := h.deps()
			d.self = "/opt/virtctl"
			d.lookPath = func(f string) (string, error) { return "/usr/bin/" + f, nil }
			var got []string
			d.exec = func(_ context.Context, bin string, args []string) error {
				got = append([]string{bin}, args...)
				return nil
			}
			args := append([]string{"--kubeconfig", h.kubeconfig}, splitArgs(tc.args)...)
			for i := range tc.want {
				tc.want[i] = strings.ReplaceAll(tc.want[i], "KUBECONFIG", shellQuote(h.kubeconfig))
			}
			if code := run(context.Background(), args, d); code != 0 {
				t.Fatalf("exit %d: %s", code, h.stderr.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("client command (-want +got):\n%s", diff)
			}
		})
	}
}

// The client's exit status is virtctl's, with nothing added; a missing
// client and a bad target say why.
func TestSSHFailures(t *testing.T) {
	h := newHarness(t, "lab")
	d := h.deps()
	d.lookPath = func(f string) (string, error) { return "/usr/bin/" + f, nil }
	d.exec = func(context.Context, string, []string) error { return exec.Command("sh", "-c", "exit 255").Run() }
	if code := run(context.Background(), []string{"ssh", "vm/tiny"}, d); code != 255 || h.stderr.String() != "" {
		t.Errorf("ssh failing with 255: exit %d, stderr %q", code, h.stderr.String())
	}
	d.lookPath = func(string) (string, error) { return "", exec.ErrNotFound }
	if code := run(context.Background(), []string{"ssh", "vm/tiny"}, d); code != 1 || !strings.Contains(h.stderr.String(), "the local ssh client is needed") {
		t.Errorf("no ssh: exit %d, stderr %q", code, h.stderr.String())
	}
	for _, args := range [][]string{{"ssh", "@vm/tiny"}, {"ssh", "pod/tiny"}, {"scp", "a", "b"}, {"scp", "vm/a:/x", "vm/b:/y"}} {
		h.stderr = &syncBuffer{}
		d.stderr = h.stderr
		d.exec = func(context.Context, string, []string) error { return errors.New("ran") }
		if code := run(context.Background(), args, d); code != 1 || !strings.Contains(h.stderr.String(), "Error:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, h.stderr.String())
		}
	}
}

// splitArgs splits a command line on spaces, keeping single-quoted parts.
func splitArgs(s string) []string {
	var out []string
	for i, part := range strings.Split(s, "'") {
		if i%2 == 1 {
			out = append(out, part)
			continue
		}
		out = append(out, strings.Fields(part)...)
	}
	return out
}
