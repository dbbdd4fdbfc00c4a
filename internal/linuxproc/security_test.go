package linuxproc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatus(t *testing.T) {
	const status = "Name:\tqemu-system-x86\nUid:\t107\t107\t107\t107\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000201000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n"
	got, err := parseStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	want := Security{UID: 107, NoNewPrivs: true, Seccomp: 2, Bounding: 1<<12 | 1<<21}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"NET_ADMIN", "SYS_ADMIN"}, CapabilityNames(got.Bounding)); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	for _, bad := range []string{"Uid:\t0\n", status + "CapEff:\tzz\n", strings.Replace(status, "Seccomp:\t2", "Seccomp:\tx", 1)} {
		if _, err := parseStatus(strings.NewReader(bad)); err == nil {
			t.Errorf("parseStatus(%q) accepted", bad)
		}
	}
}

func TestCapabilityBit(t *testing.T) {
	for name, want := range map[string]uint{"CHOWN": 0, "NET_ADMIN": 12, "CAP_SYS_ADMIN": 21, "sys_admin": 21, "CHECKPOINT_RESTORE": 40} {
		if got, ok := CapabilityBit(name); !ok || got != want {
			t.Errorf("CapabilityBit(%q) = %d, %t; want %d", name, got, ok, want)
		}
	}
	if _, ok := CapabilityBit("ALL"); ok {
		t.Error("ALL is not one capability")
	}
}

// A process started with no_new_privs and a bounding set of one
// capability is read back as such from /proc.
func TestSecurityOf(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed: %v", err)
	}
	cmd := exec.Command(setpriv, "--no-new-privs", "--bounding-set", "-all,+net_admin", "--inh-caps", "-all", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	bit, _ := CapabilityBit("NET_ADMIN")
	var got Security
	deadline := time.Now().Add(10 * time.Second)
	for {
		// setpriv applies the settings, then becomes sleep.
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
		if got, err = SecurityOf(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(comm)) == "sleep" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !got.NoNewPrivs || got.Bounding != 1<<bit {
		t.Errorf("sleep under setpriv: %+v (bounding %v), want no_new_privs and bounding [NET_ADMIN]", got, CapabilityNames(got.Bounding))
	}
	self, err := SecurityOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.UID != os.Geteuid() {
		t.Errorf("own uid %d, want %d", self.UID, os.Geteuid())
	}
}
