package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestMain(m *testing.M) { Main(m) }

func contains(list []string, sub string) bool {
	for _, l := range list {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// A process carrying the owner marker is reported until it is gone.
func TestLeftoversFindsMarkedProcess(t *testing.T) {
	Integration(t)
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	assert.NilError(t, cmd.Start())
	pid := "pid " + strconv.Itoa(cmd.Process.Pid) + " "
	assert.Assert(t, contains(leftovers(nil), pid), "marked process not reported: %v", leftovers(nil))

	assert.NilError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Assert(t, !contains(leftovers(nil), pid), "killed process still reported")
}

// A process with a clean environment that sees a mount of a testenv folder
// (a guest started by a private libvirtd) is reported too.
func TestLeftoversFindsProcessSeeingOurMount(t *testing.T) {
	Integration(t)
	dir := Dir(t)
	script := `mkdir -p /run/vkt-probe && mount --bind "$1" /run/vkt-probe && exec sleep 300`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "probe", dir)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	assert.NilError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.Remove("/run/vkt-probe")
	}()
	pid := "pid " + strconv.Itoa(cmd.Process.Pid) + " "
	deadline := time.Now().Add(5 * time.Second)
	for !contains(leftovers(nil), pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process in a private namespace with our mount not reported: %v", leftovers(nil))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A cgroup that appears during the run is reported, and no longer once removed.
func TestLeftoversFindsNewCgroup(t *testing.T) {
	Integration(t)
	before := cgroups()
	group := "/sys/fs/cgroup/pids/" + NamePrefix() + "probe"
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err != nil {
		group = "/sys/fs/cgroup/unified/" + NamePrefix() + "probe"
	}
	assert.NilError(t, os.Mkdir(group, 0o755))
	assert.Assert(t, contains(leftovers(before), "cgroup "+group), "new cgroup not reported: %v", leftovers(before))
	assert.NilError(t, os.Remove(group))
	assert.Assert(t, !contains(leftovers(before), "cgroup "+group), "removed cgroup still reported")
}

// Test packages run in parallel: a cgroup named after another test
// process's NamePrefix is that process's to check, not ours.
func TestLeftoversLeavesOtherProcessesCgroups(t *testing.T) {
	Integration(t)
	before := cgroups()
	other := os.Getpid() + 1
	group := "/sys/fs/cgroup/pids/virtkit-vkt-" + strconv.Itoa(other) + "-kubelet"
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err != nil {
		group = "/sys/fs/cgroup/unified/virtkit-vkt-" + strconv.Itoa(other) + "-kubelet"
	}
	assert.NilError(t, os.Mkdir(group, 0o755))
	defer os.Remove(group)
	assert.Assert(t, !contains(leftovers(before), "cgroup "+group), "another process's cgroup reported: %v", leftovers(before))
	mine := strings.Replace(group, strconv.Itoa(other), strconv.Itoa(os.Getpid()), 1)
	assert.NilError(t, os.Mkdir(mine, 0o755))
	defer os.Remove(mine)
	assert.Assert(t, contains(leftovers(before), "cgroup "+mine), "our own cgroup not reported: %v", leftovers(before))
}
