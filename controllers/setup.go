package controllers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/evacuation"
	"github.com/virtkit/virtkit/controllers/migration"
	"github.com/virtkit/virtkit/controllers/vm"
	"github.com/virtkit/virtkit/controllers/vmi"
)

// AddToManager registers the VirtualMachine, VirtualMachineInstance,
// VirtualMachineInstanceMigration and evacuation controllers with mgr,
// configured by cfg. daemons/virt-controller calls it;
// so can an integrator's own manager.
func AddToManager(mgr ctrl.Manager, cfg Config) error {
	if cfg.LauncherImage == "" {
		return fmt.Errorf("controllers: Config.LauncherImage: required")
	}
	if err := vm.New(vm.WithSpecOptions(cfg.SpecOptions()...)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachine controller: %w", err)
	}
	if err := vmi.New(vmi.WithPodOptions(cfg.PodOptions())).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineInstance controller: %w", err)
	}
	migOpts := []migration.Option{migration.WithPodOptions(cfg.PodOptions())}
	if cfg.KubeVirtNamespace != "" {
		migOpts = append(migOpts, migration.WithKubeVirtNamespace(cfg.KubeVirtNamespace))
	}
	if err := migration.New(migOpts...).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: VirtualMachineInstanceMigration controller: %w", err)
	}
	if err := evacuation.New(cfg.KubeVirtNamespace).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controllers: evacuation controller: %w", err)
	}
	return nil
}
