package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"libvirt.org/go/libvirtxml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/nodelabels"
)

// NodeLabeller labels the handler's node with what a guest's CPU can be
// there, as KubeVirt's node labeller does (virt/nodelabels): from the files
// the launcher's host CPU probe wrote into Dir (an init container of the
// handler's pod; contract.HostCPUCapsFile and contract.HostCPUBaselineFile).
// It replaces the labels virt/nodelabels owns and leaves the others alone,
// once, when the manager starts. A Dir without the probe's files labels
// nothing (a node the probe could not describe); a file that cannot be
// read or parsed is an error. It is a controller-runtime manager.Runnable.
type NodeLabeller struct {
	Client client.Client
	Node   string
	Dir    string
	// Obsolete are the obsolete CPU models; nil: KubeVirt's defaults.
	Obsolete map[string]bool
	Log      logr.Logger
}

// maxProbeFile bounds the probe's files (a few KiB each).
const maxProbeFile = 4 << 20

// Start labels the node and returns.
func (l NodeLabeller) Start(ctx context.Context) error {
	labels, ok, err := l.labels()
	if err != nil || !ok {
		return err
	}
	if err := l.apply(ctx, labels); err != nil {
		return err
	}
	if l.Log.GetSink() != nil {
		l.Log.Info("node labelled with its CPU models and features", "node", l.Node, "labels", len(labels))
	}
	return nil
}

// labels reads the probe's files; ok is false when there are none.
func (l NodeLabeller) labels() (map[string]string, bool, error) {
	var caps libvirtxml.DomainCaps
	doc, err := readProbeFile(filepath.Join(l.Dir, contract.HostCPUCapsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := caps.Unmarshal(doc); err != nil {
		return nil, false, fmt.Errorf("handler: node labels: %s: %w", contract.HostCPUCapsFile, err)
	}
	var baseline *libvirtxml.DomainCPU
	doc, err = readProbeFile(filepath.Join(l.Dir, contract.HostCPUBaselineFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, err
	default:
		baseline = &libvirtxml.DomainCPU{}
		if err := baseline.Unmarshal(doc); err != nil {
			return nil, false, fmt.Errorf("handler: node labels: %s: %w", contract.HostCPUBaselineFile, err)
		}
	}
	return nodelabels.Labels(&caps, baseline, l.Obsolete), true, nil
}

// apply sets labels on the node and removes the owned labels it no longer
// has (a merge patch; null deletes).
func (l NodeLabeller) apply(ctx context.Context, labels map[string]string) error {
	var node corev1.Node
	if err := l.Client.Get(ctx, client.ObjectKey{Name: l.Node}, &node); err != nil {
		return fmt.Errorf("handler: node labels: node %s: %w", l.Node, err)
	}
	change := map[string]any{}
	for k := range node.Labels {
		if _, keep := labels[k]; nodelabels.Owned(k) && !keep {
			change[k] = nil
		}
	}
	for k, v := range labels {
		if node.Labels[k] != v {
			change[k] = v
		}
	}
	if len(change) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": change}})
	if err != nil {
		return err
	}
	if err := l.Client.Patch(ctx, &node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("handler: node labels: node %s: %w", l.Node, err)
	}
	return nil
}

// readProbeFile reads path, refusing a link or anything larger than
// maxProbeFile.
func readProbeFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", fmt.Errorf("handler: node labels: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProbeFile+1))
	if err != nil {
		return "", fmt.Errorf("handler: node labels: %s: %w", path, err)
	}
	if len(b) > maxProbeFile {
		return "", fmt.Errorf("handler: node labels: %s: larger than %d bytes", path, maxProbeFile)
	}
	return string(b), nil
}
