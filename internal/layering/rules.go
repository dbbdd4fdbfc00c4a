package layering

// Module is the import path of the module the rules apply to.
const Module = "github.com/virtkit/virtkit"

// A Rule forbids the packages under From (an import path below Module, or
// "" for all) to depend, directly or not, on any package under one of
// Forbidden, except the packages under one of Allowed. Test files are not
// counted: a test may reach above its package.
type Rule struct {
	From      string
	Forbidden []string
	Allowed   []string
	Why       string
}

// Rules are the tree's layering rules.
var Rules = []Rule{
	{
		From:      "virt",
		Forbidden: []string{"controllers", "operator", "virtapi", "daemons", "local", "cmd", "hack", "test", "examples", "internal/testenv", "internal/testguest", "internal/localcluster", "virt/domain/domaintest", "virt/storage/storagetest", "virt/network/networktest"},
		Why:       "the SDK sits below the controllers, virt-api and the daemons, and never needs a test helper",
	},
	{
		From:      "controllers",
		Forbidden: []string{"operator", "virtapi", "daemons", "local", "cmd", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster"},
		// The node API is the protocol between virt-api and the handlers:
		// the handler serves it.
		Allowed: []string{"virtapi/nodeapi"},
		Why:     "reconcilers sit below the daemons and beside virt-api",
	},
	{
		From:      "virtapi",
		Forbidden: []string{"operator", "controllers", "daemons", "local", "cmd", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster"},
		// The one rule of reading KubeVirt's and pods' conditions: pure,
		// with no reconciler in it.
		Allowed: []string{"controllers/conditions"},
		Why:     "virt-api sits below the daemons and beside the reconcilers",
	},
	{
		From:      "metrics",
		Forbidden: []string{"operator", "controllers", "virtapi", "daemons", "local", "cmd", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster"},
		Why:       "collectors sit below every daemon that registers them",
	},
	{
		From:      "deploy",
		Forbidden: []string{"operator", "controllers", "daemons", "local", "cmd", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster"},
		// Reached through virt-api's parts; pure, no reconciler in it.
		Allowed: []string{"controllers/conditions"},
		Why:     "the install objects are data built from virt-api's parts",
	},
	{
		From:      "operator",
		Forbidden: []string{"controllers", "daemons", "local", "cmd", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster"},
		// Reached through deploy's objects; pure, no reconciler in it.
		Allowed: []string{"controllers/conditions"},
		Why:     "the operator installs the daemons from deploy's objects; it runs none of their reconcilers",
	},
	{
		From:      "cmd/virtctl",
		Forbidden: []string{"virt", "controllers", "daemons", "local", "deploy", "metrics", "hack", "test", "internal/testenv", "internal/testguest", "internal/localcluster", "virtapi/admission", "virtapi/eviction"},
		// KubeVirt's object rules, pure and with no dependency in the
		// module: the label value expose selects launcher pods by, and
		// the export token's header, key and form.
		Allowed: []string{"virt/spec", "virt/storage/export/token"},
		Why:     "virtctl speaks only the API (through virtapi/subresources' client, which reaches virtapi/nodeapi's stream types)",
	},
	{
		From:      "",
		Forbidden: []string{"daemons"},
		Why:       "a daemon is wiring: its package is a program, and only its own tests may reach it",
	},
}

// Pure are the packages that must build on every GOOS without cgo, and
// therefore must not depend on a Linux-only package.
var Pure = []string{
	"virt/spec",
	"virt/clusterconfig",
	"virt/instancetypes",
	"virt/network",
	"virt/storage",
	"virt/storage/importer",
	"virt/storage/dvspec",
	"virt/storage/importer/contract",
	"virt/storage/upload",
	"virt/storage/snapshot",
	"virt/storage/backendstorage",
	"virt/storage/export/token",
	"virt/clone",
	"virt/guestagent",
	"virt/accesscred",
	"virt/domain",
	"virt/migrate",
	"virt/hostfacts",
	"virt/nodelabels",
	"virt",
	"metrics",
	"examples/convert",
	"virtapi/frontproxy",
	"virtapi/subresources/requests",
	"controllers/handler/state",
}

// LinuxOnly are packages outside the module that build only on Linux (or
// need cgo). The module's own Linux-only packages are found by asking the
// go command which packages have no files for another GOOS.
var LinuxOnly = []string{
	"golang.org/x/sys/unix",
	"github.com/vishvananda/netlink",
	"github.com/vishvananda/netns",
	"github.com/google/nftables",
	"libvirt.org/go/libvirt",
}
