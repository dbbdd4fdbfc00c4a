package controllers

import (
	"context"
	"fmt"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/controllers/cdiresource"
	"github.com/virtkit/virtkit/controllers/clone"
	"github.com/virtkit/virtkit/controllers/datasource"
	"github.com/virtkit/virtkit/controllers/datavolume"
	"github.com/virtkit/virtkit/controllers/evacuation"
	"github.com/virtkit/virtkit/controllers/export"
	"github.com/virtkit/virtkit/controllers/migration"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/controllers/pool"
	"github.com/virtkit/virtkit/controllers/replicaset"
	"github.com/virtkit/virtkit/controllers/snapshot"
	"github.com/virtkit/virtkit/controllers/storageprofile"
	"github.com/virtkit/virtkit/controllers/vm"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/controllers/workloadupdate"
	"github.com/virtkit/virtkit/internal/scheme"
)

// AddToManager registers the VirtualMachine, VirtualMachineInstance,
// VirtualMachineInstanceReplicaSet, VirtualMachinePool,
// VirtualMachineInstanceMigration, evacuation, node and workload update
// controllers, the VM snapshot, restore and clone controllers
// (addSnapshots),
// the DataVolume and DataSource controllers when cfg.ImporterImage is
// set, and the VirtualMachineExport controller when cfg.ExportServerImage
// and cfg.ExportSigner are, with mgr, configured by cfg. daemons/virt-controller calls it; so can an integrator's own manager.
//
// New VMIs (their spec defaults and validation) and new launcher and
// migration target pods follow the KubeVirt CR of cfg.KubeVirtNamespace as
// it is when each is made (cfg with the CR applied, FromKubeVirt), so pass
// cfg as the flags give it, before the CR: a CR that turns useEmulation off
// then applies to the next launcher pods without a restart.
func AddToManager(mgr ctrl.Manager, cfg Config) error {
	if cfg.LauncherImage == "" {
		return fmt.Errorf("controllers: Config.LauncherImage: required")
	}
	live := Live(mgr.GetAPIReader(), cfg)
	specs := LiveSpecOptions(mgr.GetAPIReader(), cfg)
	pods := func(ctx context.Context) (vmi.PodOptions, error) {
		c, err := live(ctx)
		return c.PodOptions(), err
	}
	rollout := func(ctx context.Context) (vm.Rollout, error) {
		c, err := live(ctx)
		return c.Rollout(), err
	}
	if err := vm.New(vm.WithSpecOptions(cfg.SpecOptions()...), vm.WithSpecOptionsFrom(specs), vm.WithRolloutFrom(rollout)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachine controller: %w", err)
	}
	if err := vmi.New(vmi.WithPodOptions(cfg.PodOptions()), vmi.WithPodOptionsFrom(pods)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineInstance controller: %w", err)
	}
	if err := replicaset.New(replicaset.WithSpecOptionsFrom(specs)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineInstanceReplicaSet controller: %w", err)
	}
	if err := pool.New().SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachinePool controller: %w", err)
	}
	migOpts := []migration.Option{migration.WithPodOptions(cfg.PodOptions()), migration.WithPodOptionsFrom(pods)}
	if cfg.KubeVirtNamespace != "" {
		migOpts = append(migOpts, migration.WithKubeVirtNamespace(cfg.KubeVirtNamespace))
	}
	if err := migration.New(migOpts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineInstanceMigration controller: %w", err)
	}
	if err := evacuation.New(cfg.KubeVirtNamespace).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: evacuation controller: %w", err)
	}
	if err := nodehealth.New(nodehealth.WithOptions(cfg.NodeHealth)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: node controller: %w", err)
	}
	if err := addSnapshots(mgr, cfg.Freezer); err != nil {
		return err
	}
	if cfg.ImporterImage != "" {
		dv := datavolume.New(datavolume.WithPodOptions(datavolume.PodOptions{Image: cfg.ImporterImage, PullPolicy: cfg.ImagePullPolicy,
			UploadClientCA: cfg.UploadClientCA, UploadClientName: cfg.UploadClientName}), datavolume.WithNamespace(cfg.KubeVirtNamespace))
		if err := dv.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: DataVolume controller: %w", err)
		}
		if err := datasource.New().SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: DataSource controller: %w", err)
		}
		if err := cdiconfig.New(cdiconfig.WithDefaults(cdiconfig.Defaults{UploadProxyURL: cfg.UploadProxyURL})).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: CDIConfig controller: %w", err)
		}
		if err := cdiresource.New().SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: CDI resource controller: %w", err)
		}
		if err := storageprofile.New().SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: StorageProfile controller: %w", err)
		}
	}
	if cfg.ExportServerImage != "" && cfg.ExportSigner != nil {
		opts := []export.Option{export.WithImage(cfg.ExportServerImage, cfg.ImagePullPolicy), export.WithSpecOptionsFrom(specs),
			export.WithKubeVirtCertParams(cfg.KubeVirtNamespace)}
		if cfg.ExportProxyHost != "" {
			opts = append(opts, export.WithExternalHost(cfg.ExportProxyHost, cfg.ExportProxyCA))
		} else {
			// As KubeVirt: an Ingress to the export proxy in the install
			// namespace gives the external links.
			opts = append(opts, export.WithIngressDiscovery(cfg.KubeVirtNamespace))
		}
		if err := export.New(cfg.ExportSigner, opts...).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("controllers: VirtualMachineExport controller: %w", err)
		}
	}
	image := func(kv *virtv1.KubeVirt) string { return FromKubeVirt(kv, cfg).LauncherImage }
	if err := workloadupdate.New(cfg.KubeVirtNamespace, image).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: workload update controller: %w", err)
	}
	return nil
}

// addSnapshots registers the VM restore controller and, when the cluster
// serves CSI VolumeSnapshots (snapshot.storage.k8s.io/v1, which come with
// the cluster's snapshot controller), the VM snapshot controller; without
// them a VirtualMachineSnapshot waits, and fails at its deadline.
func addSnapshots(mgr ctrl.Manager, freezer snapshot.Freezer) error {
	if err := snapshot.NewRestoreReconciler().SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineRestore controller: %w", err)
	}
	if served, err := scheme.Served(mgr.GetRESTMapper(), &volumesnapshotv1.VolumeSnapshot{}); err != nil {
		return fmt.Errorf("controllers: VolumeSnapshots: %w", err)
	} else if !served {
		mgr.GetLogger().Info("the cluster serves no VolumeSnapshots: VM snapshots are off until virt-controller restarts with them", "group", volumesnapshotv1.GroupName)
		return nil
	}
	var opts []snapshot.Option
	if freezer != nil {
		opts = append(opts, snapshot.WithFreezer(freezer))
	}
	if err := snapshot.NewSnapshotReconciler(opts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineSnapshot controller: %w", err)
	}
	// A clone is a snapshot restored to a new VM.
	if err := clone.New().SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineClone controller: %w", err)
	}
	return nil
}
