package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func migrateCommand() command {
	return command{name: "migrate", use: "migrate (VM)", short: "Live-migrate a running virtual machine to another node.", args: 1,
		example: "  # Migrate the virtual machine 'tiny':\n  virtctl migrate tiny\n  # Only to nodes labelled zone=b:\n  virtctl migrate tiny --addedNodeSelector zone=b",
		setup: func(fs *pflag.FlagSet) action {
			sel := fs.StringToString("addedNodeSelector", nil, "key=value[,key=value]: an extra node selector for this migration; it can only narrow the VM's own constraints.")
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				opts := virtv1.MigrateOptions{DryRun: s.dryRun(*dry), AddedNodeSelector: *sel}
				return s.scheduled(op{"migrate", kindVM, args[0]}, func() error { return s.sub.Migrate(ctx, s.ns, args[0], opts) })
			}
		}}
}

// migrateCancelCommand cancels a migration as KubeVirt's virtctl does: it
// deletes the VMI's VirtualMachineInstanceMigration that has not ended.
func migrateCancelCommand() command {
	return command{name: "migrate-cancel", use: "migrate-cancel (VM)", short: "Cancel the running migration of a virtual machine.", args: 1,
		example: "  # Cancel the migration of 'tiny':\n  virtctl migrate-cancel tiny",
		setup: func(fs *pflag.FlagSet) action {
			dry := fs.Bool("dry-run", false, dryRunUsage)
			return func(ctx context.Context, s *session, args []string) error {
				if err := s.connect(); err != nil {
					return err
				}
				name := args[0]
				o := op{"migrate-cancel", kindVM, name}
				var migs virtv1.VirtualMachineInstanceMigrationList
				if err := s.kube.List(ctx, &migs, client.InNamespace(s.ns)); err != nil {
					return s.explain(o, fmt.Errorf("listing VirtualMachineInstanceMigrations: %w", err))
				}
				dryRun := s.dryRun(*dry)
				for i := range migs.Items {
					m := &migs.Items[i]
					if m.Spec.VMIName != name || m.IsFinal() {
						continue
					}
					// The UID precondition spares a migration created anew
					// under the same name since the list.
					opts := &client.DeleteOptions{DryRun: dryRun, Preconditions: &metav1.Preconditions{UID: &m.UID}}
					if err := s.kube.Delete(ctx, m, opts); err != nil {
						return s.explain(o, fmt.Errorf("deleting VirtualMachineInstanceMigration %s: %w", m.Name, err))
					}
					fmt.Fprintf(s.stdout, "VM %s was scheduled to %s\n", name, o.verb)
					return nil
				}
				return &explained{msg: fmt.Sprintf("Found no migration to cancel for %s", name),
					hint: fmt.Sprintf("`kubectl get vmims -n %s` lists the migrations and their phases; only one that has not ended can be cancelled.", s.ns)}
			}
		}}
}
