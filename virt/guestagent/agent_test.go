package guestagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/guestagent"
)

// agent answers commands with canned replies, in qemu-ga 7.2's words.
type agent map[string]string

func (a agent) GuestAgentCommand(_ context.Context, domain, command string, timeout time.Duration) (string, error) {
	var req struct {
		Execute string `json:"execute"`
	}
	if err := json.Unmarshal([]byte(command), &req); err != nil {
		return "", err
	}
	if timeout != guestagent.CommandTimeout || domain != "ns_vm" {
		return "", fmt.Errorf("called for %s with timeout %v", domain, timeout)
	}
	r, ok := a[req.Execute]
	if !ok {
		return "", errors.New("The command " + req.Execute + " has not been found")
	}
	return r, nil
}

var qga = agent{
	"guest-info":          `{"return":{"version":"7.2.19","supported_commands":[{"enabled":true,"name":"guest-ping","success-response":true},{"enabled":false,"name":"guest-exec","success-response":true}]}}`,
	"guest-get-osinfo":    `{"return":{"name":"virtkit test guest","kernel-release":"6.1.0-57-cloud-amd64","version":"1","pretty-name":"virtkit test guest 1","version-id":"1","kernel-version":"#1 SMP","machine":"x86_64","id":"virtkit"}}`,
	"guest-get-host-name": `{"return":{"host-name":"tiny"}}`,
	"guest-get-timezone":  `{"return":{"zone":"UTC","offset":0}}`,
	"guest-get-users":     `{"return":[{"user":"root","login-time":1764950000.5}]}`,
	"guest-get-fsinfo":    `{"return":[{"name":"sr0","used-bytes":364544,"mountpoint":"/mnt/seed","disk":[{"serial":"QM00005","bus-type":"sata","bus":0,"unit":0,"target":0}],"type":"iso9660","total-bytes":364544}]}`,
	"guest-network-get-interfaces": `{"return":[{"name":"lo","ip-addresses":[{"ip-address-type":"ipv4","ip-address":"127.0.0.1","prefix":8}],"hardware-address":"00:00:00:00:00:00"},` +
		`{"name":"eth0","ip-addresses":[{"ip-address-type":"ipv4","ip-address":"10.0.2.2","prefix":24},{"ip-address-type":"ipv6","ip-address":"fe80::1","prefix":64}],"hardware-address":"02:AB:CD:00:00:01"}]}`,
	"guest-fsfreeze-freeze": `{"return":1}`,
	"guest-fsfreeze-thaw":   `{"return":1}`,
	"guest-fsfreeze-status": `{"return":"thawed"}`,
}

func TestInfo(t *testing.T) {
	ctx := context.Background()
	got, err := guestagent.Info(ctx, qga, "ns_vm")
	if err != nil {
		t.Fatal(err)
	}
	want := virtv1.VirtualMachineInstanceGuestAgentInfo{
		GAVersion:         "7.2.19",
		SupportedCommands: []virtv1.GuestAgentCommandInfo{{Name: "guest-ping", Enabled: true}, {Name: "guest-exec"}},
		Hostname:          "tiny",
		OS: virtv1.VirtualMachineInstanceGuestOSInfo{Name: "virtkit test guest", KernelRelease: "6.1.0-57-cloud-amd64", Version: "1",
			PrettyName: "virtkit test guest 1", VersionID: "1", KernelVersion: "#1 SMP", Machine: "x86_64", ID: "virtkit"},
		Timezone: "UTC, 0",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Info (-want +got):\n%s", d)
	}

	// An agent with guest-info only: the rest stays empty.
	old, err := guestagent.Info(ctx, agent{"guest-info": qga["guest-info"]}, "ns_vm")
	if err != nil || old.GAVersion != "7.2.19" || old.Hostname != "" || old.OS != (virtv1.VirtualMachineInstanceGuestOSInfo{}) {
		t.Errorf("Info of a small agent = %+v, %v", old, err)
	}
	// No agent: an error naming the domain and the command.
	if _, err := guestagent.Info(ctx, agent{}, "ns_vm"); err == nil || !strings.Contains(err.Error(), "ns_vm: guest-info") {
		t.Errorf("Info without an agent: %v", err)
	}
}

func TestLists(t *testing.T) {
	ctx := context.Background()
	users, err := guestagent.Users(ctx, qga, "ns_vm")
	if d := cmp.Diff([]virtv1.VirtualMachineInstanceGuestOSUser{{UserName: "root", LoginTime: 1764950000.5}}, users); err != nil || d != "" {
		t.Errorf("Users: %v (-want +got):\n%s", err, d)
	}
	none, err := guestagent.Users(ctx, agent{"guest-get-users": `{"return":[]}`}, "ns_vm")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("Users of a guest nobody is logged in to = %#v, %v; want an empty list", none, err)
	}
	fss, err := guestagent.Filesystems(ctx, qga, "ns_vm")
	want := []virtv1.VirtualMachineInstanceFileSystem{{DiskName: "sr0", MountPoint: "/mnt/seed", FileSystemType: "iso9660", UsedBytes: 364544, TotalBytes: 364544,
		Disk: []virtv1.VirtualMachineInstanceFileSystemDisk{{Serial: "QM00005", BusType: "sata"}}}}
	if d := cmp.Diff(want, fss); err != nil || d != "" {
		t.Errorf("Filesystems: %v (-want +got):\n%s", err, d)
	}
	nics, err := guestagent.Interfaces(ctx, qga, "ns_vm")
	if d := cmp.Diff([]guestagent.Interface{{Name: "eth0", MAC: "02:ab:cd:00:00:01", IPs: []string{"10.0.2.2", "fe80::1"}}}, nics); err != nil || d != "" {
		t.Errorf("Interfaces: %v (-want +got):\n%s", err, d)
	}
	n, err := guestagent.Freeze(ctx, qga, "ns_vm")
	if err != nil || n != 1 {
		t.Errorf("Freeze = %d, %v", n, err)
	}
	if n, err := guestagent.Thaw(ctx, qga, "ns_vm"); err != nil || n != 1 {
		t.Errorf("Thaw = %d, %v", n, err)
	}
	if s, err := guestagent.FreezeStatus(ctx, qga, "ns_vm"); err != nil || s != guestagent.Thawed {
		t.Errorf("FreezeStatus = %q, %v", s, err)
	}
}

func TestBoundsAndBadReplies(t *testing.T) {
	ctx := context.Background()
	var many []string
	for i := 0; i < 1000; i++ {
		many = append(many, fmt.Sprintf(`{"user":"u%d"}`, i))
	}
	users, err := guestagent.Users(ctx, agent{"guest-get-users": `{"return":[` + strings.Join(many, ",") + `]}`}, "ns_vm")
	if err != nil || len(users) != guestagent.MaxItems {
		t.Errorf("Users of 1000: %d, %v; want %d", len(users), err, guestagent.MaxItems)
	}
	long, err := guestagent.Info(ctx, agent{"guest-info": `{"return":{"version":"` + strings.Repeat("é", 1000) + `"}}`}, "ns_vm")
	if err != nil || len(long.GAVersion) > guestagent.MaxText || !strings.HasPrefix(long.GAVersion, "éé") || !utf8.ValidString(long.GAVersion) {
		t.Errorf("a 2000-byte version: %d bytes, %v; want at most %d, whole characters", len(long.GAVersion), err, guestagent.MaxText)
	}
	for _, reply := range []string{`not json`, `{"error":{"class":"GenericError","desc":"x"}}`, `{"return":"a string"}`} {
		_, err := guestagent.Filesystems(ctx, agent{"guest-get-fsinfo": reply}, "ns_vm")
		if !errors.Is(err, guestagent.ErrReply) {
			t.Errorf("Filesystems of %s: %v, want ErrReply", reply, err)
		}
	}
}
