package fake_test

import (
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/domain/domaintest"
	"github.com/virtkit/virtkit/virt/domain/fake"
)

// Two fakes joined as peers pass the migration contract that two real
// libvirtd pass, on the real clock and the default MigrationModel.
func TestContractMigration(t *testing.T) {
	domaintest.RunMigration(t, func(t *testing.T) domaintest.MigrationTarget {
		src, dst := fake.New(), fake.New()
		src.AddPeer(peerURI, dst)
		return domaintest.MigrationTarget{
			Source:      src,
			Destination: dst,
			Domain:      Document,
			Params:      func(*testing.T) domain.MigrateParams { return domain.MigrateParams{DestinationURI: peerURI} },
			Timeout:     10 * time.Second,
			Caps:        domaintest.MigrationCapabilities{PostCopy: true},
		}
	})
}
