package storage

import (
	"context"
	"path/filepath"
)

// WithRoot makes every file the Manager reads or writes lie below root: the
// pod's file system as seen from the node, such as /proc/PID/root of a
// process in the launcher pod, or /proc/self/fd/N of a directory handle on
// it. Only the effects move: the plan, and so the domain document, keeps the
// paths as QEMU sees them inside the pod, and the overlays Prepare writes
// name their base image by its pod path.
//
// Paths are joined to root, not resolved inside it: a symbolic link in the
// pod's files is followed from the node's root. A node agent that prepares
// storage for pods it does not trust must not follow links the pod made
// (see docs/sdk/storage.md, Limits).
func WithRoot(root string) Option { return func(o *options) { o.root = root } }

// RootInspector returns an Inspector that looks at path below root whenever
// asked about path, and reports errors with the pod's path. root "" returns
// i unchanged. Use it for virt/storage/hotplug when the Manager runs WithRoot.
func RootInspector(root string, i Inspector) Inspector {
	if root == "" {
		return i
	}
	return rootInspector{root: root, in: i}
}

type rootInspector struct {
	root string
	in   Inspector
}

func (r rootInspector) Inspect(ctx context.Context, path string) (ImageInfo, error) {
	return r.in.Inspect(ctx, inRoot(r.root, path))
}

func (r rootInspector) Exists(ctx context.Context, path string) (bool, error) {
	return r.in.Exists(ctx, inRoot(r.root, path))
}

func (r rootInspector) Files(ctx context.Context, dir string) ([]string, error) {
	return r.in.Files(ctx, inRoot(r.root, dir))
}

// inRoot is path below root; root "" leaves path alone.
func inRoot(root, path string) string {
	if root == "" {
		return path
	}
	return filepath.Join(root, path)
}
