package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
)

// CNI is the Network that connects pods with the standard CNI plugins, run
// by exec under the CNI protocol (CNI_COMMAND and friends in the
// environment, the network configuration on stdin, the result on stdout):
// bridge (the pod's eth0 on a host bridge that is the pods' gateway, with
// masquerade to the outside through nftables), host-local IPAM and loopback.
// A pod's secondary networks (PodNetwork.Secondary) are attached after eth0
// as Multus attaches them, with the plugins their configurations name
// (secondaryPlugins says which may run).
// Each pod's network namespace is a file PodNetwork.Dir/netns.
type CNI struct {
	// BinDir holds the plugins (`make cni-bins`).
	BinDir string
	// Network names the network (the CNI "name"; masquerade rules carry it).
	Network string
	// Bridge is the host bridge's name; Subnet the pods' IPv4 range.
	Bridge string
	Subnet string
	// DataDir keeps host-local's address leases.
	DataDir string
	// Env is added to the plugins' environment.
	Env []string
}

var _ Network = (*CNI)(nil)

// cniVersion is the protocol version of the configurations we send.
const cniVersion = "1.0.0"

// podIfName is the pod's interface, as a kubelet names it.
const podIfName = "eth0"

func (c *CNI) netnsPath(pod PodNetwork) string { return filepath.Join(pod.Dir, "netns") }

func (c *CNI) bridgeConf() ([]byte, error) {
	masq := "nftables"
	return json.Marshal(map[string]any{
		"cniVersion":       cniVersion,
		"name":             c.Network,
		"type":             "bridge",
		"bridge":           c.Bridge,
		"isGateway":        true,
		"isDefaultGateway": true,
		"ipMasq":           true,
		"ipMasqBackend":    masq,
		"hairpinMode":      true,
		"ipam": map[string]any{
			"type":    "host-local",
			"ranges":  [][]map[string]string{{{"subnet": c.Subnet}}},
			"dataDir": c.DataDir,
		},
	})
}

// ConfList is the network as a CNI configuration list (the bridge with
// host-local IPAM), for a container runtime that runs the plugins itself,
// such as containerd on a real kubelet node; the runtime adds loopback.
func (c *CNI) ConfList() ([]byte, error) {
	bridge, err := c.bridgeConf()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"cniVersion": cniVersion,
		"name":       c.Network,
		"plugins":    []json.RawMessage{bridge},
	})
}

func (c *CNI) loopbackConf() []byte {
	return []byte(`{"cniVersion":"` + cniVersion + `","name":"loopback","type":"loopback"}`)
}

// Setup implements Network.
func (c *CNI) Setup(ctx context.Context, pod PodNetwork) (Attachment, error) {
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(c.BinDir, p)); err != nil {
			return Attachment{}, fmt.Errorf("cni: plugin %s: %w (run `make cni-bins`)", p, err)
		}
	}
	path := c.netnsPath(pod)
	if _, err := os.Lstat(path); err == nil {
		if err := c.Teardown(ctx, pod); err != nil {
			return Attachment{}, err
		}
	}
	if err := createNetNS(path); err != nil {
		return Attachment{}, err
	}
	conf, err := c.bridgeConf()
	if err != nil {
		return Attachment{}, err
	}
	if _, err := c.invoke(ctx, "loopback", "ADD", pod, path, "lo", c.loopbackConf()); err != nil {
		return Attachment{}, errors.Join(err, c.Teardown(ctx, pod))
	}
	out, err := c.invoke(ctx, "bridge", "ADD", pod, path, podIfName, conf)
	if err != nil {
		return Attachment{}, errors.Join(err, c.Teardown(ctx, pod))
	}
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return Attachment{}, errors.Join(fmt.Errorf("cni: bridge result %q: %w", out, err), c.Teardown(ctx, pod))
	}
	att := Attachment{NetNS: path}
	for _, ip := range res.IPs {
		addr, _, err := net.ParseCIDR(ip.Address)
		if err != nil {
			continue
		}
		att.IPs = append(att.IPs, addr.String())
	}
	if len(att.IPs) == 0 {
		return Attachment{}, errors.Join(fmt.Errorf("cni: bridge gave pod %s/%s no address: %s", pod.Namespace, pod.Name, out), c.Teardown(ctx, pod))
	}
	if err := c.attachSecondary(ctx, pod, path); err != nil {
		return Attachment{}, errors.Join(err, c.Teardown(ctx, pod))
	}
	return att, nil
}

// Teardown implements Network: DEL releases the address, the veth pair and
// the masquerade rules even when the namespace is gone.
func (c *CNI) Teardown(ctx context.Context, pod PodNetwork) error {
	path := c.netnsPath(pod)
	conf, err := c.bridgeConf()
	if err != nil {
		return err
	}
	ns := path
	if _, err := os.Stat(path); err != nil {
		ns = "" // DEL without a namespace still frees the lease and the rules
	}
	var errs []error
	if err := c.detachSecondary(ctx, pod, ns); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.invoke(ctx, "bridge", "DEL", pod, ns, podIfName, conf); err != nil {
		errs = append(errs, err)
	}
	if ns != "" {
		if _, err := c.invoke(ctx, "loopback", "DEL", pod, ns, "lo", c.loopbackConf()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeNetNS(path); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close removes the bridge (once no pod uses it: the node calls it when it
// stops).
func (c *CNI) Close() error {
	l, err := netlink.LinkByName(c.Bridge)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("cni: bridge %s: %w", c.Bridge, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("cni: removing bridge %s: %w", c.Bridge, err)
	}
	return nil
}

// invoke runs one plugin command and returns its stdout.
func (c *CNI) invoke(ctx context.Context, plugin, command string, pod PodNetwork, netnsPath, ifName string, conf []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, plugin))
	cmd.Env = append([]string{
		"CNI_COMMAND=" + command,
		"CNI_CONTAINERID=" + pod.ID,
		"CNI_NETNS=" + netnsPath,
		"CNI_IFNAME=" + ifName,
		"CNI_PATH=" + c.BinDir,
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=" + pod.Namespace + ";K8S_POD_NAME=" + pod.Name + ";K8S_POD_INFRA_CONTAINER_ID=" + pod.ID,
		"PATH=" + pathEnv(),
	}, c.Env...)
	cmd.Stdin = bytes.NewReader(conf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var perr struct {
			Msg     string `json:"msg"`
			Details string `json:"details"`
		}
		msg := strings.TrimSpace(stderr.String())
		if json.Unmarshal(stdout.Bytes(), &perr) == nil && perr.Msg != "" {
			msg = perr.Msg
			if perr.Details != "" {
				msg += ": " + perr.Details
			}
		}
		return nil, fmt.Errorf("cni: %s %s for pod %s/%s: %w: %s", plugin, command, pod.Namespace, pod.Name, err, msg)
	}
	return stdout.Bytes(), nil
}

// pathEnv is the node's PATH with the sbin folders the plugins' tools
// (nft, iptables) live in.
func pathEnv() string {
	p := os.Getenv("PATH")
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if !strings.Contains(":"+p+":", ":"+d+":") {
			p += ":" + d
		}
	}
	return strings.TrimPrefix(p, ":")
}
