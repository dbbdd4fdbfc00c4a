package node

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Identity is who a container's process runs as: its user, its primary
// group and its supplementary groups, and whether it may gain privileges
// (no_new_privs when not).
type Identity struct {
	UID, GID uint32
	Groups   []uint32
	// NoNewPrivs: execve never grants privileges (set-user-ID bits and file
	// capabilities are ignored), as allowPrivilegeEscalation: false asks.
	NoNewPrivs bool
}

// identityOf is the Identity of container c of pod as a kubelet reads
// their security contexts: runAsUser, runAsGroup and runAsNonRoot of the
// container, else of the pod; the pod's supplementalGroups and fsGroup as
// supplementary groups; no_new_privs when the container sets
// allowPrivilegeEscalation to false. A local node runs host binaries, so
// "the image's user" is root. It is nil when nothing is asked: the process
// runs as the node does. passwd is the node's account file, read for the
// primary group of a runAsUser given without runAsGroup.
func identityOf(pod *corev1.Pod, c *corev1.Container, passwd string) (*Identity, error) {
	var uid, gid *int64
	var nonRoot *bool
	var groups []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
		for _, g := range psc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
		if psc.FSGroup != nil {
			groups = append(groups, uint32(*psc.FSGroup))
		}
	}
	noNewPrivs := false
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		noNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	}
	if nonRoot != nil && *nonRoot && (uid == nil || *uid == 0) {
		if uid == nil {
			return nil, fmt.Errorf("container %q has runAsNonRoot and image will run as root (a local node runs host binaries as root unless runAsUser says otherwise)", c.Name)
		}
		return nil, fmt.Errorf("container %q: securityContext.runAsUser: 0: the container has runAsNonRoot and would run as root", c.Name)
	}
	if uid == nil && gid == nil && len(groups) == 0 && !noNewPrivs {
		return nil, nil
	}
	id := &Identity{Groups: groups, NoNewPrivs: noNewPrivs}
	if uid != nil {
		id.UID = uint32(*uid)
	}
	switch {
	case gid != nil:
		id.GID = uint32(*gid)
	case uid != nil:
		// As a runtime does with the image's /etc/passwd: the user's group
		// if the account exists, else 0.
		if e, ok, err := lookupID(passwd, id.UID); err != nil {
			return nil, err
		} else if ok {
			id.GID = e.gid
		}
	}
	return id, nil
}

// accountsFileLimit bounds the node's /etc/passwd and /etc/group as read.
const accountsFileLimit = 4 << 20

// account is one line of an accounts file: its name, ID and, in passwd,
// primary group.
type account struct {
	name    string
	id, gid uint32
}

// lookupID finds the entry of id in the accounts file path (passwd or
// group format: name:x:id[:gid...]).
func lookupID(path string, id uint32) (account, bool, error) {
	b, err := readAccounts(path)
	if err != nil {
		return account{}, false, err
	}
	a, ok := findID(b, id)
	return a, ok, nil
}

// findID finds the entry of id in the content of an accounts file.
func findID(b []byte, id uint32) (account, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil || uint32(n) != id {
			continue
		}
		a := account{name: f[0], id: id}
		if len(f) > 3 {
			if g, err := strconv.ParseUint(f[3], 10, 32); err == nil {
				a.gid = uint32(g)
			}
		}
		return a, true
	}
	return account{}, false
}

func readAccounts(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, accountsFileLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > accountsFileLimit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, accountsFileLimit)
	}
	return b, nil
}

// accountMounts gives the process of id an /etc/passwd naming its user and
// an /etc/group naming its group when the node's files (passwd, group) do
// not: an image brings its own accounts, a local node's containers see the
// node's, and programs such as libvirt refuse to run as a user without an
// account. The files, the node's lines plus the missing one, are written
// in scratch and bound at /etc/passwd and /etc/group in the process's view
// only.
func accountMounts(id *Identity, passwd, group, scratch string) ([]Mount, error) {
	if id == nil {
		return nil, nil
	}
	var mounts []Mount
	add := func(src, name string, n uint32, line string) error {
		b, err := readAccounts(src)
		if err != nil {
			return err
		}
		if _, ok := findID(b, n); ok {
			return nil
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		dst := filepath.Join(scratch, name)
		if err := os.WriteFile(dst, append(b, line...), 0o644); err != nil {
			return err
		}
		if err := os.Chmod(dst, 0o644); err != nil {
			return err
		}
		mounts = append(mounts, Mount{Source: dst, Target: "/etc/" + name, ReadOnly: true})
		return nil
	}
	if err := add(passwd, "passwd", id.UID, fmt.Sprintf("container-%d:x:%d:%d:container user:/:/usr/sbin/nologin\n", id.UID, id.UID, id.GID)); err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	if err := add(group, "group", id.GID, fmt.Sprintf("container-%d:x:%d:\n", id.GID, id.GID)); err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	return mounts, nil
}
