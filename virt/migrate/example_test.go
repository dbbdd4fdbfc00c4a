package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/migrate"
)

// Resolve a VMI's migration configuration from the KubeVirt CR and the
// MigrationPolicies, then migrate its domain between two hypervisor
// connections. Fakes stand in for the two launchers' libvirt here; with
// virt/domain/libvirt the same calls drive a real migration.
func Example() {
	ctx := context.Background()

	// The cluster allows post-copy; a policy for databases in production
	// limits the bandwidth and the time per GB.
	bandwidth := resource.MustParse("1Gi")
	perGiB := int64(30)
	allow := true
	cluster := &virtv1.MigrationConfiguration{AllowPostCopy: &allow}
	policies := []migrationsv1.MigrationPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: "databases"},
		Spec: migrationsv1.MigrationPolicySpec{
			Selectors: &migrationsv1.Selectors{
				VirtualMachineInstanceSelector: migrationsv1.LabelSelector{"workload": "db"},
				NamespaceSelector:              migrationsv1.LabelSelector{"env": "prod"},
			},
			BandwidthPerMigration:   &bandwidth,
			CompletionTimeoutPerGiB: &perGiB,
		},
	}}
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Labels: map[string]string{"workload": "db"}}}
	vmi.Spec.Domain.Memory = &virtv1.Memory{Guest: resource.NewQuantity(512<<20, resource.BinarySI)}
	cfg, err := migrate.Resolve(cluster, policies, vmi, map[string]string{"env": "prod"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("policy %s: %d MiB/s, post-copy %v, completion timeout %s\n",
		cfg.Policy, cfg.BandwidthMiB(), cfg.AllowPostCopy, cfg.CompletionTimeout(migrate.DataSize(vmi, 0)))

	// Two hypervisors; the source runs the guest.
	source, target := fake.New(), fake.New()
	defer source.Close()
	defer target.Close()
	const targetURI = "qemu+unix:///system?socket=/var/run/virtkit/target/libvirt-sock"
	source.AddPeer(targetURI, target)
	doc := &libvirtxml.Domain{
		Type:   "qemu",
		Name:   "default_db-1",
		Memory: &libvirtxml.DomainMemory{Value: 512, Unit: "MiB"},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
	}
	if err := source.Define(ctx, doc); err != nil {
		fmt.Println(err)
		return
	}
	if err := source.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	res, err := migrate.Run(ctx, source, doc.Name, migrate.Destination{
		URI:          targetURI,
		MigrationURI: "tcp://10.0.0.2:49152",
		Host:         target,
	}, cfg, migrate.WithDataSize(migrate.DataSize(vmi, 0)), migrate.WithPollInterval(10*time.Millisecond))
	if err != nil {
		// errors.Is(err, migrate.ErrCompletionTimeout), ErrStalled,
		// ErrCancelled or ErrFailed say why; the guest still runs on the
		// source unless it failed in post-copy.
		fmt.Println(errors.Is(err, migrate.ErrFailed), err)
		return
	}
	fmt.Println("mode:", res.Mode)
	_, _, err = source.State(ctx, doc.Name)
	fmt.Println("gone from the source:", errors.Is(err, domain.ErrNotFound))
	state, reason, _ := target.State(ctx, doc.Name)
	fmt.Println("on the target:", state, domain.ReasonString(state, reason))
	// Output:
	// policy databases: 1024 MiB/s, post-copy true, completion timeout 30s
	// mode: PreCopy
	// gone from the source: true
	// on the target: running migrated
}
