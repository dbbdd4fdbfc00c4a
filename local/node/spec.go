package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// processSpec is the host process of container c: its command resolved to
// a host binary, its environment, its mounts (volumes and the termination
// message file) and its log.
func (r *podRun) processSpec(c *corev1.Container) (ProcessSpec, error) {
	r.mu.Lock()
	vols, att, pod := r.vols, r.att, r.pod
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	r.mu.Unlock()

	env := containerEnv(c, hostname, r.p.cfg.BinDirs, r.p.opts.env)
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	argv := make([]string, 0, len(c.Command)+len(c.Args))
	for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
		argv = append(argv, expandVars(a, vars))
	}
	if len(c.Command) == 0 {
		return ProcessSpec{}, fmt.Errorf("container %q has no command: a local node runs host binaries and does not know the entrypoint of image %q", c.Name, c.Image)
	}
	path, err := lookPath(argv[0], r.p.cfg.BinDirs, vars["PATH"])
	if err != nil {
		return ProcessSpec{}, err
	}

	var mounts []Mount
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return ProcessSpec{}, fmt.Errorf("container %q: volumeMount %q: no such volume", c.Name, m.Name)
		}
		var subPath string
		if sub := expandVars(m.SubPath+m.SubPathExpr, vars); sub != "" {
			if filepath.IsAbs(sub) || strings.HasPrefix(filepath.Clean(sub), "..") {
				return ProcessSpec{}, fmt.Errorf("container %q: volumeMount %q: subPath %q must be a relative path inside the volume", c.Name, m.Name, sub)
			}
			if !v.readOnly {
				if err := makeSubPath(v.path, sub); err != nil {
					return ProcessSpec{}, fmt.Errorf("container %q: volumeMount %q: %w", c.Name, m.Name, err)
				}
			}
			subPath = filepath.Clean(sub)
		}
		// Bidirectional would also carry the container's mounts out to
		// the node: the local node gives it HostToContainer's half only.
		prop := m.MountPropagation != nil && (*m.MountPropagation == corev1.MountPropagationHostToContainer || *m.MountPropagation == corev1.MountPropagationBidirectional)
		mounts = append(mounts, Mount{Source: v.path, SubPath: subPath, Target: m.MountPath, ReadOnly: m.ReadOnly || v.readOnly, HostToContainer: prop})
	}
	devices, err := containerDevices(c, vols)
	if err != nil {
		return ProcessSpec{}, err
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	dir := r.containerDir(c.Name)
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return ProcessSpec{}, err
	}
	// A fresh, world-writable file per start: the container may run as anyone.
	term := r.terminationLogPath(c.Name)
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return ProcessSpec{}, err
	}
	if err := os.Chmod(term, 0o666); err != nil {
		return ProcessSpec{}, err
	}
	mounts = append(mounts, Mount{Source: term, Target: termPath})
	id, err := identityOf(pod, c, nodePasswd)
	if err != nil {
		return ProcessSpec{}, err
	}
	accounts, err := accountMounts(id, nodePasswd, nodeGroup, scratch)
	if err != nil {
		return ProcessSpec{}, fmt.Errorf("container %q: %w", c.Name, err)
	}
	mounts = append(mounts, accounts...)

	if err := os.MkdirAll(filepath.Dir(r.logPath(c.Name)), 0o700); err != nil {
		return ProcessSpec{}, err
	}
	log, err := os.OpenFile(r.logPath(c.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return ProcessSpec{}, err
	}
	return ProcessSpec{Path: path, Args: argv, Env: env, Dir: c.WorkingDir, NetNS: att.NetNS,
		Mounts: mounts, Devices: devices, Scratch: scratch, Log: log, User: id}, nil
}

// containerDevices are c's volumeDevices: each names a volume whose host
// path is a block device (a Block claim's published device), made at its
// devicePath in the container's view.
func containerDevices(c *corev1.Container, vols map[string]hostVolume) ([]Device, error) {
	var devs []Device
	for _, d := range c.VolumeDevices {
		v, ok := vols[d.Name]
		if !ok {
			return nil, fmt.Errorf("container %q: volumeDevice %q: no such volume", c.Name, d.Name)
		}
		if !filepath.IsAbs(d.DevicePath) {
			return nil, fmt.Errorf("container %q: volumeDevice %q: devicePath %q must be an absolute path", c.Name, d.Name, d.DevicePath)
		}
		var st unix.Stat_t
		if err := unix.Lstat(v.path, &st); err != nil {
			return nil, fmt.Errorf("container %q: volumeDevice %q: %w", c.Name, d.Name, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFBLK {
			return nil, fmt.Errorf("container %q: volumeDevice %q: %s is not a block device (a volumeDevice needs a claim in Block mode)", c.Name, d.Name, v.path)
		}
		devs = append(devs, Device{Target: d.DevicePath, Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev), ReadOnly: v.readOnly})
	}
	return devs, nil
}

// The node's account files, which its containers see.
const (
	nodePasswd = "/etc/passwd"
	nodeGroup  = "/etc/group"
)

// containerEnv is the container's environment: PATH (the binary folders,
// then the usual ones) and HOSTNAME unless it sets them, its own variables
// (virtual-kubelet resolved valueFrom and envFrom before the pod reached the
// provider) and the node's extra ones.
func containerEnv(c *corev1.Container, hostname string, binDirs, extra []string) []string {
	path := strings.Join(append(append([]string(nil), binDirs...), defaultPath), ":")
	env := []string{"PATH=" + path, "HOSTNAME=" + hostname}
	index := map[string]int{"PATH": 0, "HOSTNAME": 1}
	set := func(k, v string) {
		if i, ok := index[k]; ok {
			env[i] = k + "=" + v
			return
		}
		index[k] = len(env)
		env = append(env, k+"="+v)
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.Value == "" {
			continue
		}
		v := expandVars(e.Value, vars)
		vars[e.Name] = v
		set(e.Name, v)
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	return env
}

// expandVars replaces $(NAME) by the variable's value when it is defined
// and $$ by $, as Kubernetes expands commands, arguments and values.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if j := strings.IndexByte(s[i+2:], ')'); j >= 0 {
				name := s[i+2 : i+2+j]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
					i += 2 + j
					continue
				}
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// lookPath resolves a container's command to a host executable: a name is
// looked up in binDirs, then in path; an absolute path that does not exist
// on the host is looked up by its base name in binDirs.
func lookPath(cmd string, binDirs []string, path string) (string, error) {
	isExec := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
	}
	if strings.Contains(cmd, "/") {
		if filepath.IsAbs(cmd) && isExec(cmd) {
			return cmd, nil
		}
		for _, d := range binDirs {
			if p := filepath.Join(d, filepath.Base(cmd)); isExec(p) {
				return p, nil
			}
		}
		return "", fmt.Errorf("exec: %q: no such executable on the host or in %s", cmd, strings.Join(binDirs, ", "))
	}
	for _, d := range binDirs {
		if p := filepath.Join(d, cmd); isExec(p) {
			return p, nil
		}
	}
	if path == "" {
		path = defaultPath
	}
	for _, d := range filepath.SplitList(path) {
		if p := filepath.Join(d, cmd); d != "" && isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: %w in %s", cmd, exec.ErrNotFound, strings.Join(append(append([]string(nil), binDirs...), filepath.SplitList(path)...), ":"))
}
