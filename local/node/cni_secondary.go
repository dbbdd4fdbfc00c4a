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
	if err := writeSecondary(pod, pod.Secondary); err != nil {
		return err
	}
	for i, s := range pod.Secondary {
		if err := c.attachOne(ctx, pod, nsPath, s, plans[i]); err != nil {
			return err
		}
	}
	return nil
}

// attachOne runs ADD of each plugin of s, chaining their results.
func (c *CNI) attachOne(ctx context.Context, pod PodNetwork, nsPath string, s SecondaryNetwork, plans []pluginConf) error {
	var prev json.RawMessage
	for _, p := range plans {
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
	return nil
}

// detachOne runs DEL of each plugin of s, last first.
func (c *CNI) detachOne(ctx context.Context, pod PodNetwork, nsPath string, s SecondaryNetwork) error {
	plans, err := c.secondaryPlugins(s)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range slices.Backward(plans) {
		b, err := json.Marshal(p.conf)
		if err == nil {
			_, err = c.invoke(ctx, p.plugin, "DEL", pod, nsPath, s.Interface, b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("network %s: %w", s.Network, err))
		}
	}
	return errors.Join(errs...)
}

// readSecondary is what the pod's folder records as attached.
func readSecondary(pod PodNetwork) ([]SecondaryNetwork, error) {
	path := filepath.Join(pod.Dir, secondaryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cni: the secondary networks: %w", err)
	}
	var nets []SecondaryNetwork
	if err := json.Unmarshal(b, &nets); err != nil {
		return nil, fmt.Errorf("cni: the secondary networks in %s: %w", path, err)
	}
	return nets, nil
}

// writeSecondary records nets as the pod's attached secondary networks.
func writeSecondary(pod PodNetwork, nets []SecondaryNetwork) error {
	b, err := json.Marshal(nets)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pod.Dir, secondaryFile), b, 0o600); err != nil {
		return fmt.Errorf("cni: recording the secondary networks: %w", err)
	}
	return nil
}

// detachSecondary detaches the secondary networks Setup recorded in the
// pod's folder, in reverse order, and forgets them.
func (c *CNI) detachSecondary(ctx context.Context, pod PodNetwork, nsPath string) error {
	nets, err := readSecondary(pod)
	if err != nil || nets == nil {
		return err
	}
	var errs []error
	for _, s := range slices.Backward(nets) {
		errs = append(errs, c.detachOne(ctx, pod, nsPath, s))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(filepath.Join(pod.Dir, secondaryFile))
}

// SyncSecondary changes a running pod's secondary networks to
// pod.Secondary, as Multus's dynamic networks controller does when the
// pod's annotation changes (interface hotplug): a recorded network that
// pod.Secondary no longer names (the same attachment on the same
// interface) is detached, then each one it names that is not recorded is
// attached; the record follows each change, so Teardown detaches exactly
// what is attached.
func (c *CNI) SyncSecondary(ctx context.Context, pod PodNetwork) error {
	path := c.netnsPath(pod)
	if _, err := os.Lstat(path); err != nil {
		return fmt.Errorf("cni: pod %s/%s has no network namespace: %w", pod.Namespace, pod.Name, err)
	}
	have, err := readSecondary(pod)
	if err != nil {
		return err
	}
	key := func(s SecondaryNetwork) string { return s.Network + "@" + s.Interface }
	want := map[string]bool{}
	for _, s := range pod.Secondary {
		want[key(s)] = true
	}
	kept := make([]SecondaryNetwork, 0, len(have))
	for i, s := range have {
		if want[key(s)] {
			kept = append(kept, s)
			continue
		}
		if err := c.detachOne(ctx, pod, path, s); err != nil {
			// What is not detached yet stays recorded.
			return errors.Join(err, writeSecondary(pod, append(kept, have[i:]...)))
		}
	}
	if err := writeSecondary(pod, kept); err != nil {
		return err
	}
	attached := map[string]bool{}
	for _, s := range kept {
		attached[key(s)] = true
	}
	for _, s := range pod.Secondary {
		if attached[key(s)] {
			continue
		}
		plans, err := c.secondaryPlugins(s)
		if err != nil {
			return err
		}
		if err := writeSecondary(pod, append(kept, s)); err != nil {
			return err
		}
		if err := c.attachOne(ctx, pod, path, s, plans); err != nil {
			// Undone and forgotten, so that the next sync tries again.
			return errors.Join(err, c.detachOne(ctx, pod, path, s), writeSecondary(pod, kept))
		}
		kept = append(kept, s)
		attached[key(s)] = true
	}
	return nil
}
