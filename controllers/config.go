package controllers

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Config is what the controllers take from the cluster's KubeVirt CR and
// from the daemon's flags. It is plain data, read once at start.
type Config struct {
	// Emulation runs guests under software emulation (KubeVirt's
	// spec.configuration.developerConfiguration.useEmulation): launcher pods
	// then ask for no /dev/kvm and carry TCG's memory overhead.
	Emulation bool
	// LauncherImage is the image launcher pods run.
	LauncherImage string
}

// FromKubeVirt returns base with the settings of kv that virtkit honours.
func FromKubeVirt(kv *virtv1.KubeVirt, base Config) Config {
	if kv == nil {
		return base
	}
	if dc := kv.Spec.Configuration.DeveloperConfiguration; dc != nil && dc.UseEmulation {
		base.Emulation = true
	}
	return base
}

// ReadConfig reads the KubeVirt CR of namespace and applies it to base. No
// CR leaves base as it is; more than one is an error, as in KubeVirt, which
// honours a single installation per cluster.
func ReadConfig(ctx context.Context, r client.Reader, namespace string, base Config) (Config, error) {
	var list virtv1.KubeVirtList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return base, fmt.Errorf("read the KubeVirt CR in namespace %s: %w", namespace, err)
	}
	switch len(list.Items) {
	case 0:
		return base, nil
	case 1:
		return FromKubeVirt(&list.Items[0], base), nil
	}
	return base, fmt.Errorf("namespace %s holds %d KubeVirt CRs; virtkit honours exactly one", namespace, len(list.Items))
}
