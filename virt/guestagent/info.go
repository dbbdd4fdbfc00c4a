package guestagent

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
)

// Info asks the agent what KubeVirt's guestosinfo shows: its version and
// commands (guest-info), the OS (guest-get-osinfo), the host name
// (guest-get-host-name) and the time zone (guest-get-timezone). Only
// guest-info must answer: an agent that lacks a later command leaves its
// part empty. Users and file systems are asked apart (Users, Filesystems).
func Info(ctx context.Context, c Commander, domain string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	var out virtv1.VirtualMachineInstanceGuestAgentInfo
	var gi struct {
		Version  string `json:"version"`
		Commands []struct {
			Name    string `json:"name"`
			Enabled bool   `json:"enabled"`
		} `json:"supported_commands"`
	}
	if err := call(ctx, c, domain, "guest-info", nil, &gi); err != nil {
		return out, err
	}
	out.GAVersion = text(gi.Version)
	for _, cmd := range first(gi.Commands) {
		out.SupportedCommands = append(out.SupportedCommands, virtv1.GuestAgentCommandInfo{Name: text(cmd.Name), Enabled: cmd.Enabled})
	}
	var os struct {
		Name          string `json:"name"`
		KernelRelease string `json:"kernel-release"`
		Version       string `json:"version"`
		PrettyName    string `json:"pretty-name"`
		VersionID     string `json:"version-id"`
		KernelVersion string `json:"kernel-version"`
		Machine       string `json:"machine"`
		ID            string `json:"id"`
	}
	if call(ctx, c, domain, "guest-get-osinfo", nil, &os) == nil {
		out.OS = virtv1.VirtualMachineInstanceGuestOSInfo{Name: text(os.Name), KernelRelease: text(os.KernelRelease), Version: text(os.Version),
			PrettyName: text(os.PrettyName), VersionID: text(os.VersionID), KernelVersion: text(os.KernelVersion), Machine: text(os.Machine), ID: text(os.ID)}
	}
	var host struct {
		HostName string `json:"host-name"`
	}
	if call(ctx, c, domain, "guest-get-host-name", nil, &host) == nil {
		out.Hostname = text(host.HostName)
	}
	var tz struct {
		Zone   string `json:"zone"`
		Offset int    `json:"offset"`
	}
	if call(ctx, c, domain, "guest-get-timezone", nil, &tz) == nil {
		// KubeVirt's form: the zone's name and its offset in seconds.
		out.Timezone = fmt.Sprintf("%s, %d", text(tz.Zone), tz.Offset)
	}
	return out, nil
}

// Users is the guest's logged-in users (guest-get-users), at most MaxItems.
func Users(ctx context.Context, c Commander, domain string) ([]virtv1.VirtualMachineInstanceGuestOSUser, error) {
	var users []struct {
		User      string  `json:"user"`
		Domain    string  `json:"domain"`
		LoginTime float64 `json:"login-time"`
	}
	if err := call(ctx, c, domain, "guest-get-users", nil, &users); err != nil {
		return nil, err
	}
	out := []virtv1.VirtualMachineInstanceGuestOSUser{}
	for _, u := range first(users) {
		out = append(out, virtv1.VirtualMachineInstanceGuestOSUser{UserName: text(u.User), Domain: text(u.Domain), LoginTime: u.LoginTime})
	}
	return out, nil
}

// Filesystems is the guest's mounted file systems (guest-get-fsinfo), at
// most MaxItems, with their disks.
func Filesystems(ctx context.Context, c Commander, domain string) ([]virtv1.VirtualMachineInstanceFileSystem, error) {
	var fss []struct {
		Name       string `json:"name"`
		Mountpoint string `json:"mountpoint"`
		Type       string `json:"type"`
		UsedBytes  int    `json:"used-bytes"`
		TotalBytes int    `json:"total-bytes"`
		Disk       []struct {
			Serial  string `json:"serial"`
			BusType string `json:"bus-type"`
		} `json:"disk"`
	}
	if err := call(ctx, c, domain, "guest-get-fsinfo", nil, &fss); err != nil {
		return nil, err
	}
	out := []virtv1.VirtualMachineInstanceFileSystem{}
	for _, fs := range first(fss) {
		f := virtv1.VirtualMachineInstanceFileSystem{DiskName: text(fs.Name), MountPoint: text(fs.Mountpoint), FileSystemType: text(fs.Type),
			UsedBytes: fs.UsedBytes, TotalBytes: fs.TotalBytes}
		for _, d := range first(fs.Disk) {
			f.Disk = append(f.Disk, virtv1.VirtualMachineInstanceFileSystemDisk{Serial: text(d.Serial), BusType: text(d.BusType)})
		}
		out = append(out, f)
	}
	return out, nil
}
