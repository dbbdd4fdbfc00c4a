package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HostState is what a node may change on the host, as it was before the
// node started. Stop and Cleanup put it back.
type HostState struct {
	// Sysctls are the values of the kernel settings the kubelet sets.
	Sysctls map[string]string `json:"sysctls"`
	// Chains lists, per "iptables TABLE" or "ip6tables TABLE", the KUBE-*
	// chains that existed: the kubelet's. Other chains are others' business.
	Chains map[string][]string `json:"chains"`
	// Paths maps each fixed path the kubelet or containerd may create to
	// whether it existed.
	Paths map[string]bool `json:"paths"`
	// Netns are the entries of /run/netns that containerd would have made
	// (cni-*: it names pods' network namespaces so).
	Netns []string `json:"netns"`
}

// kubeletSysctls are the settings the kubelet changes at start
// (protectKernelDefaults is off, so it sets rather than checks them).
var kubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// fixedPaths are the paths outside Config.Dir that the kubelet, containerd
// or the CNI plugins create whatever their configuration says.
var fixedPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd", "/run/netns", "/etc/cni", "/opt/cni"}

var iptablesTables = []string{"filter", "nat", "mangle"}

// kubeChainPrefix starts the names of the kubelet's iptables chains.
const kubeChainPrefix = "KUBE-"

// netnsPrefix starts the names containerd gives pods' network namespaces in
// /run/netns.
const netnsPrefix = "cni-"

// RecordHostState reads the host state a node may change.
func RecordHostState(ctx context.Context) (HostState, error) {
	s := HostState{Sysctls: map[string]string{}, Chains: map[string][]string{}, Paths: map[string]bool{}}
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(sysctlPath(k))
		if err != nil {
			continue // not on this kernel
		}
		s.Sysctls[k] = strings.TrimSpace(string(v))
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, t := range iptablesTables {
			chains, err := listChains(ctx, cmd, t)
			if err != nil {
				return s, err
			}
			s.Chains[cmd+" "+t] = chains
		}
	}
	for _, p := range fixedPaths {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	var err error
	s.Netns, err = netnsEntries()
	return s, err
}

// Restore puts the recorded state back: the sysctls' values, no iptables
// chain that was not there (rules that jump to one are deleted first), no
// fixed path that did not exist (its mounts unmounted), no network
// namespace that was not there. It goes on after a failure and returns
// every error.
func (s HostState) Restore(ctx context.Context) error {
	var errs []error
	for k, v := range s.Sysctls {
		cur, err := os.ReadFile(sysctlPath(k))
		if err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", k, v, err))
		}
	}
	for key, before := range s.Chains {
		cmd, table, _ := strings.Cut(key, " ")
		if err := removeNewChains(ctx, cmd, table, before); err != nil {
			errs = append(errs, err)
		}
	}
	entries, err := netnsEntries()
	errs = append(errs, err)
	for _, e := range entries {
		if slices.Contains(s.Netns, e) {
			continue
		}
		p := filepath.Join("/run/netns", e)
		errs = append(errs, unmountBelow(p), os.Remove(p))
	}
	for _, p := range fixedPaths {
		if existed, ok := s.Paths[p]; !ok || existed {
			continue
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if p == "/run/netns" {
			// Shared with whatever else names network namespaces: only
			// an empty folder goes (with the mount containerd made of it).
			if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
				_ = unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
				if err := os.Remove(p); err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
				}
			}
			continue
		}
		if err := unmountBelow(p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// Changes lists how the host differs from s now, one line per difference;
// none means the host is as recorded.
func (s HostState) Changes(ctx context.Context) ([]string, error) {
	now, err := RecordHostState(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for k, v := range s.Sysctls {
		if now.Sysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s is %s, was %s", k, now.Sysctls[k], v))
		}
	}
	for key, before := range s.Chains {
		for _, c := range now.Chains[key] {
			if !slices.Contains(before, c) {
				out = append(out, fmt.Sprintf("%s: chain %s is new", key, c))
			}
		}
	}
	for p, existed := range s.Paths {
		if p == "/run/netns" && !existed && now.Paths[p] && len(now.Netns) == 0 {
			continue // others' namespaces may keep it; containerd's are checked below
		}
		if now.Paths[p] != existed {
			out = append(out, fmt.Sprintf("%s: existed %v, exists %v", p, existed, now.Paths[p]))
		}
	}
	for _, e := range now.Netns {
		if !slices.Contains(s.Netns, e) {
			out = append(out, "network namespace /run/netns/"+e+" is new")
		}
	}
	slices.Sort(out)
	return out, nil
}

// record is what Config.Dir/host-state.json keeps: enough to clean up
// after a node that was not stopped, with nothing but its folder.
type record struct {
	Node   string    `json:"node"`
	Bridge string    `json:"bridge"`
	State  HostState `json:"hostState"`
}

func (r record) save(file string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func loadRecord(file string) (record, error) {
	var r record
	b, err := os.ReadFile(file)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// listChains lists the KUBE-* chains of one iptables table.
func listChains(ctx context.Context, cmd, table string) ([]string, error) {
	all, err := allChains(ctx, cmd, table)
	if err != nil {
		return nil, err
	}
	var chains []string
	for _, c := range all {
		if strings.HasPrefix(c, kubeChainPrefix) {
			chains = append(chains, c)
		}
	}
	return chains, nil
}

// allChains lists every chain of one iptables table (`-S` lines "-N NAME"
// and the built-in ones' "-P NAME POLICY").
func allChains(ctx context.Context, cmd, table string) ([]string, error) {
	out, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -t %s -S: %w", cmd, table, err)
	}
	var chains []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "-N" || f[0] == "-P") {
			chains = append(chains, f[1])
		}
	}
	return chains, nil
}

// removeNewChains deletes the chains of table not in before, with every
// rule that jumps to them.
func removeNewChains(ctx context.Context, cmd, table string, before []string) error {
	now, err := allChains(ctx, cmd, table)
	if err != nil {
		return err
	}
	var added []string
	for _, c := range now {
		if !slices.Contains(before, c) && strings.HasPrefix(c, kubeChainPrefix) {
			added = append(added, c)
		}
	}
	if len(added) == 0 {
		return nil
	}
	var errs []error
	// Rules of the chains that stay which jump to a new chain go first, by
	// their number in their chain (counted from -S, deleted from the last):
	// a rule's text may hold quoted words that do not survive a re-split.
	for _, c := range now {
		if slices.Contains(added, c) {
			continue
		}
		out, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, "-S", c).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s -S %s: %w", cmd, table, c, err))
			continue
		}
		var jumping []int
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[0] != "-A" {
				continue
			}
			n++
			for i := 0; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && slices.Contains(added, f[i+1]) {
					jumping = append(jumping, n)
					break
				}
			}
		}
		for i := len(jumping) - 1; i >= 0; i-- {
			num := strconv.Itoa(jumping[i])
			if b, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, "-D", c, num).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s -t %s -D %s %s: %w: %s", cmd, table, c, num, err, b))
			}
		}
	}
	for _, op := range []string{"-F", "-X"} {
		for _, c := range added {
			if b, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, op, c).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", cmd, table, op, c, err, b))
			}
		}
	}
	return errors.Join(errs...)
}

func netnsEntries() ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), netnsPrefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// defaultRouteIP is the host's source address towards the outside, found
// from the routing table (no packet is sent).
func defaultRouteIP() (string, error) {
	c, err := net.Dial("udp4", "192.0.2.1:9")
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}
