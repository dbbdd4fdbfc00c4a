package kubelet_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/kubelet"
)

// What a kubelet adds (a chain, and a rule that jumps to it) is seen as a
// change and removed by Restore.
func TestHostStateRestoresIPTablesChains(t *testing.T) {
	testenv.Integration(t)
	ctx := context.Background()
	before, err := kubelet.RecordHostState(ctx)
	assert.NilError(t, err)
	chain := "KUBE-VKT-" + strconv.Itoa(os.Getpid())
	ipt := func(args ...string) {
		t.Helper()
		out, err := exec.Command("iptables", append([]string{"-w", "-t", "filter"}, args...)...).CombinedOutput()
		assert.NilError(t, err, "%s", out)
	}
	ipt("-N", chain)
	t.Cleanup(func() { // should Restore fail
		_ = exec.Command("iptables", "-w", "-t", "filter", "-D", "OUTPUT", "-m", "comment", "--comment", "virtkit test", "-j", chain).Run()
		_ = exec.Command("iptables", "-w", "-t", "filter", "-X", chain).Run()
	})
	ipt("-A", "OUTPUT", "-m", "comment", "--comment", "virtkit test", "-j", chain)

	changes, err := before.Changes(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, changes, []string{"iptables filter: chain " + chain + " is new"})

	assert.NilError(t, before.Restore(ctx))
	changes, err = before.Changes(ctx)
	assert.NilError(t, err)
	assert.DeepEqual(t, changes, []string(nil))
	out, _ := exec.Command("iptables", "-w", "-t", "filter", "-S", "OUTPUT").CombinedOutput()
	assert.Assert(t, !strings.Contains(string(out), chain), "the jump to the chain is gone:\n%s", out)
}
