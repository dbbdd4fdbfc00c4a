package subresources

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// MigrationGenerateName is the name prefix of the migrations migrate
// creates, KubeVirt's.
const MigrationGenerateName = "kubevirt-migrate-vm-"

// migrate is PUT virtualmachines/NAME/migrate (body v1.MigrateOptions): it
// creates a VirtualMachineInstanceMigration of the running VMI;
// controllers/migration and the handlers do the rest.
func (s *Server) migrate(ctx context.Context, req *request) error {
	var opts virtv1.MigrateOptions
	dry, err := requests.DecodeDry(req.w, req.r, &opts, &opts.DryRun, "v1.MigrateOptions", `{} or {"addedNodeSelector":{"kubernetes.io/hostname":"node-b"}}`)
	if err != nil {
		return err
	}
	if _, err := s.getVM(ctx, req); err != nil {
		return err
	}
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	if vmi.Status.Phase != virtv1.Running {
		return conflict(vmResource(), req.name, msgVMNotRunning)
	}
	mig := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: MigrationGenerateName, Namespace: req.namespace},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: req.name, AddedNodeSelector: opts.AddedNodeSelector},
	}
	if err := s.client.Create(ctx, mig, createOpts(dry)...); err != nil {
		return writeFailure(virtv1.Resource("virtualmachineinstancemigration"), req.name,
			fmt.Sprintf("creating a VirtualMachineInstanceMigration of %s/%s", req.namespace, req.name), err)
	}
	return req.accepted()
}
