package libvirt_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/domaintest"
)

// The migration contract between two private libvirtd booting the test
// guest, the same pair the other real migration tests use.
func TestContractMigrationRealLibvirtd(t *testing.T) {
	domaintest.RunMigration(t, func(t *testing.T) domaintest.MigrationTarget {
		h := twoHosts(t)
		ready := regexp.MustCompile(`^` + testguest.ReadyMarker)
		return domaintest.MigrationTarget{
			Source:      h.src,
			Destination: h.dst,
			Domain: func(name string) *libvirtxml.Domain {
				return testguest.Domain(name, h.guest, 256, h.log(name, "src"))
			},
			Params: func(t *testing.T) domain.MigrateParams {
				d := h.destination(t)
				return domain.MigrateParams{DestinationURI: d.URI, MigrationURI: d.MigrationURI, ListenAddress: d.ListenAddress}
			},
			EditDestination: func(doc *libvirtxml.Domain) {
				doc.Devices.Serials[0].Source.File.Path = h.log(doc.Name, "dst")
			},
			Booted: func(t *testing.T, name string) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				testenv.WaitConsole(t, ctx, h.log(name, "src"), ready)
			},
			Timeout: 2 * time.Minute,
			Caps:    domaintest.MigrationCapabilities{PostCopy: true},
		}
	})
}
