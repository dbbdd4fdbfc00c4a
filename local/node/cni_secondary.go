package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// secondaryFile, in a pod's folder, keeps the secondary networks Setup
// attached, for Teardown (their attachments may have changed or gone).
const secondaryFile = "secondary-networks.json"

// cniName is the CNI specification's rule for a network's name.
var cniName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`)

// pluginConf is one plugin of a secondary network, configured to run.
type pluginConf struct {
	plugin string
	conf   map[string]any
}

// secondaryPlugins turns s's configuration (a network configuration, or a
// list whose name and cniVersion each plugin takes) into the plugin
// configurations to run, in order. A NetworkAttachmentDefinition is its
// namespace's to write, so only what cannot reach beyond the pod runs:
// the bridge plugin on a bridge of its own (not the pods' network), with
// host-local IPAM or none; host-local keeps its leases in the node's
// folder whatever the configuration says.
func (c *CNI) secondaryPlugins(s SecondaryNetwork) ([]pluginConf, error) {
	var top map[string]any
	if err := json.Unmarshal(s.Config, &top); err != nil {
		return nil, fmt.Errorf("network %s: spec.config: %w", s.Network, err)
	}
	name, _ := top["name"].(string)
	if !cniName.MatchString(name) || name == c.Network {
		return nil, fmt.Errorf("network %s: spec.config: name %q is not a CNI network name of its own", s.Network, name)
	}
	version, _ := top["cniVersion"].(string)
	if version == "" {
		version = cniVersion
	}
	var confs []map[string]any
	if list, ok := top["plugins"]; ok {
		items, ok := list.([]any)
		if !ok || len(items) == 0 {
			return nil, fmt.Errorf("network %s: spec.config: plugins: not a list of plugin configurations", s.Network)
		}
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("network %s: spec.config: plugins[%d]: not an object", s.Network, i)
			}
			confs = append(confs, m)
		}
	} else {
		confs = []map[string]any{top}
	}
	out := make([]pluginConf, 0, len(confs))
	for i, m := range confs {
		at := "spec.config"
		if _, ok := top["plugins"]; ok {
			at = fmt.Sprintf("spec.config: plugins[%d]", i)
		}
		typ, _ := m["type"].(string)
		if typ != "bridge" {
			return nil, fmt.Errorf("network %s: %s: plugin %q does not run on virt-local's nodes (only bridge does)", s.Network, at, typ)
		}
		if br, _ := m["bridge"].(string); !validIfName(br) || br == c.Bridge {
			return nil, fmt.Errorf("network %s: %s: bridge %q is not a bridge of its own", s.Network, at, br)
		}
		if ipam, ok := m["ipam"]; ok {
			im, ok := ipam.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("network %s: %s: ipam: not an object", s.Network, at)
			}
			switch t, _ := im["type"].(string); t {
			case "":
			case "host-local":
				im["dataDir"] = filepath.Join(c.DataDir, "secondary")
			default:
				return nil, fmt.Errorf("network %s: %s: ipam: %q does not run on virt-local's nodes (only host-local does)", s.Network, at, t)
			}
		}
		m["name"], m["cniVersion"] = name, version
		delete(m, "prevResult")
		out = append(out, pluginConf{plugin: typ, conf: m})
	}
	return out, nil
}

// attachSecondary attaches each of pod's secondary networks to its
// interface in the namespace at nsPath, recording it first so that
// Teardown detaches what an interrupted Setup attached.
func (c *CNI) attachSecondary(ctx context.Context, pod PodNetwork, nsPath string) error {
	if len(pod.Secondary) == 0 {
		return nil
	}
	plans := make([][]pluginConf, len(pod.Secondary))
	for i, s := range pod.Secondary {
		p, err := c.secondaryPlugins(s)
		if err != nil {
			return err
		}
		plans[i] = p
	}
	b, err := json.Marshal(pod.Secondary)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pod.Dir, secondaryFile), b, 0o600); err != nil {
		return fmt.Errorf("cni: recording the secondary networks: %w", err)
	}
	for i, s := range pod.Secondary {
		var prev json.RawMessage
		for _, p := range plans[i] {
			conf := p.conf
			if prev != nil {
				conf["prevResult"] = prev
			}
			b, err := json.Marshal(conf)
			if err != nil {
				return err
			}
			out, err := c.invoke(ctx, p.plugin, "ADD", pod, nsPath, s.Interface, b)
			if err != nil {
				return fmt.Errorf("network %s: %w", s.Network, err)
			}
			prev = json.RawMessage(out)
		}
	}
	return nil
}

// detachSecondary detaches the secondary networks Setup recorded in the
// pod's folder, in reverse order, and forgets them.
func (c *CNI) detachSecondary(ctx context.Context, pod PodNetwork, nsPath string) error {
	path := filepath.Join(pod.Dir, secondaryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cni: the secondary networks: %w", err)
	}
	var nets []SecondaryNetwork
	if err := json.Unmarshal(b, &nets); err != nil {
		return fmt.Errorf("cni: the secondary networks in %s: %w", path, err)
	}
	var errs []error
	for _, s := range slices.Backward(nets) {
		plans, err := c.secondaryPlugins(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range slices.Backward(plans) {
			b, err := json.Marshal(p.conf)
			if err == nil {
				_, err = c.invoke(ctx, p.plugin, "DEL", pod, nsPath, s.Interface, b)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("network %s: %w", s.Network, err))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(path)
}
