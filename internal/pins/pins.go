//go:build tools

// Package pins holds the module's required versions of dependencies that
// capabilities still being built (CSI volume snapshots) will import, so that
// the versions checked together stay the ones resolved. It is never
// compiled: the build tag excludes it.
package pins

import (
	_ "github.com/kubernetes-csi/csi-lib-utils/rpc"
	_ "github.com/vishvananda/netlink"
	_ "github.com/vishvananda/netns"
)
