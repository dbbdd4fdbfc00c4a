package node

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A running pod's secondary networks follow its annotation: what it no
// longer names is detached, what it newly names attached, and the record
// Teardown reads follows each change; an attachment that fails is undone
// and not recorded, so that the next change tries it again.
func TestSyncSecondary(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	// A stand-in for the bridge plugin: it logs each call and fails ADD on
	// interface "bad".
	script := "#!/bin/sh\necho \"$CNI_COMMAND $CNI_IFNAME\" >>" + calls + "\n" +
		"if [ \"$CNI_COMMAND\" = ADD ] && [ \"$CNI_IFNAME\" = bad ]; then echo '{\"msg\":\"no\"}'; exit 1; fi\n" +
		"echo '{\"cniVersion\":\"1.0.0\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "bridge"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "netns"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &CNI{BinDir: bin, Network: "pods", Bridge: "vk0", DataDir: t.TempDir()}
	net := func(iface, br string) SecondaryNetwork {
		return SecondaryNetwork{Interface: iface, Network: "ns/" + br,
			Config: json.RawMessage(`{"cniVersion":"1.0.0","name":"` + br + `","type":"bridge","bridge":"` + br + `"}`)}
	}
	a, b, bad := net("poda", "br-a"), net("podb", "br-b"), net("bad", "br-c")
	pod := PodNetwork{ID: "uid", Namespace: "ns", Name: "p", Dir: dir}
	step := func(name string, want []SecondaryNetwork, wantCalls string, wantErr bool, nets ...SecondaryNetwork) {
		t.Helper()
		_ = os.Remove(calls)
		pod.Secondary = nets
		err := c.SyncSecondary(context.Background(), pod)
		if (err != nil) != wantErr {
			t.Errorf("%s: error %v, want error %v", name, err, wantErr)
		}
		got, _ := os.ReadFile(calls)
		if strings.TrimSpace(string(got)) != wantCalls {
			t.Errorf("%s: plugin calls %q, want %q", name, strings.TrimSpace(string(got)), wantCalls)
		}
		rec, err := readSecondary(pod)
		if err != nil {
			t.Fatal(err)
		}
		names := func(ns []SecondaryNetwork) (out []string) {
			for _, n := range ns {
				out = append(out, n.Network+"@"+n.Interface)
			}
			return out
		}
		if d := cmp.Diff(names(want), names(rec)); d != "" {
			t.Errorf("%s: recorded (-want +got):\n%s", name, d)
		}
	}
	step("attach one", []SecondaryNetwork{a}, "ADD poda", false, a)
	step("attach another", []SecondaryNetwork{a, b}, "ADD podb", false, a, b)
	step("detach the first", []SecondaryNetwork{b}, "DEL poda", false, b)
	step("a failing attachment is undone", []SecondaryNetwork{b}, "ADD bad\nDEL bad", true, b, bad)
	if err := c.detachSecondary(context.Background(), pod, filepath.Join(dir, "netns")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, secondaryFile)); !os.IsNotExist(err) {
		t.Errorf("the record stayed after teardown: %v", err)
	}
}
