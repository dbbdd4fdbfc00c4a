package clusterconfig

import (
	"context"
	"errors"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultNamespace is where the KubeVirt CR lives unless a caller says
// otherwise.
const DefaultNamespace = "kubevirt"

// ErrSeveral marks a namespace that holds more than one KubeVirt CR.
var ErrSeveral = errors.New("more than one KubeVirt CR; virtkit honours exactly one")

// Namespace is ns, or DefaultNamespace when ns is empty.
func Namespace(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// Lister is what Get needs of a client: controller-runtime's client.Reader
// (a cached client, or the manager's API reader for a read that must be
// current) satisfies it.
type Lister interface {
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

// Get reads the KubeVirt CR of namespace (Namespace applied). It returns nil
// and no error when the namespace holds none, and an error wrapping
// ErrSeveral when it holds more than one.
func Get(ctx context.Context, r Lister, namespace string) (*virtv1.KubeVirt, error) {
	namespace = Namespace(namespace)
	var list virtv1.KubeVirtList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("read the KubeVirt CR in namespace %s: %w", namespace, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &list.Items[0], nil
	}
	return nil, fmt.Errorf("namespace %s holds %d KubeVirt CRs: %w", namespace, len(list.Items), ErrSeveral)
}

// Configuration is the spec.configuration of kv; nil for no CR.
func Configuration(kv *virtv1.KubeVirt) *virtv1.KubeVirtConfiguration {
	if kv == nil {
		return nil
	}
	return &kv.Spec.Configuration
}

// UseEmulation is the CR's developerConfiguration.useEmulation: guests run
// under software emulation (TCG) rather than KVM. False for no CR. A node
// that must never use KVM says so itself (its handler's own setting); the
// CR can only add emulation, never take a node's away.
func UseEmulation(kv *virtv1.KubeVirt) bool {
	c := Configuration(kv)
	return c != nil && c.DeveloperConfiguration != nil && c.DeveloperConfiguration.UseEmulation
}

// Migrations is the CR's spec.configuration.migrations; nil for no CR or
// none set (virt/migrate.ClusterConfig applies KubeVirt's defaults).
func Migrations(kv *virtv1.KubeVirt) *virtv1.MigrationConfiguration {
	if c := Configuration(kv); c != nil {
		return c.MigrationConfiguration
	}
	return nil
}
