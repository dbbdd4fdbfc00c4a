package handler_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

const probedCaps = `<domainCapabilities><domain>kvm</domain><arch>x86_64</arch><cpu>
<mode name="host-model" supported="yes"><model fallback="forbid">Skylake-Client-IBRS</model><vendor>Intel</vendor>
<feature policy="require" name="ssbd"/></mode>
<mode name="custom" supported="yes"><model usable="yes">Penryn</model><model usable="no">Haswell</model></mode>
</cpu></domainCapabilities>`

const probedBaseline = `<cpu mode="custom" match="exact"><model fallback="forbid">Skylake-Client-IBRS</model><vendor>Intel</vendor>
<feature policy="require" name="sse4.1"/></cpu>`

// The labeller replaces the CPU labels it owns (an old model's goes) and
// keeps every other label.
func TestNodeLabeller(t *testing.T) {
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, contract.HostCPUCapsFile), []byte(probedCaps), 0o600))
	assert.NilError(t, os.WriteFile(filepath.Join(dir, contract.HostCPUBaselineFile), []byte(probedBaseline), 0o600))
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{"cpu-model.node.kubevirt.io/Nehalem": "true", "kubernetes.io/hostname": "n1"}}}).Build()
	ctx := context.Background()
	assert.NilError(t, handler.NodeLabeller{Client: c, Node: "n1", Dir: dir}.Start(ctx))
	var n corev1.Node
	assert.NilError(t, c.Get(ctx, client.ObjectKey{Name: "n1"}, &n))
	assert.DeepEqual(t, n.Labels, map[string]string{
		"kubernetes.io/hostname":                                   "n1",
		"cpu-model.node.kubevirt.io/Penryn":                        "true",
		"cpu-model-migration.node.kubevirt.io/Penryn":              "true",
		"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS": "true",
		"host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS":      "true",
		"host-model-required-features.node.kubevirt.io/ssbd":       "true",
		"cpu-vendor.node.kubevirt.io/Intel":                        "true",
		"cpu-feature.node.kubevirt.io/sse4.1":                      "true",
	})

	// Without the probe's files, nothing changes; a link is refused.
	assert.NilError(t, handler.NodeLabeller{Client: c, Node: "n1", Dir: t.TempDir()}.Start(ctx))
	link := t.TempDir()
	assert.NilError(t, os.Symlink(filepath.Join(dir, contract.HostCPUCapsFile), filepath.Join(link, contract.HostCPUCapsFile)))
	err := handler.NodeLabeller{Client: c, Node: "n1", Dir: link}.Start(ctx)
	assert.Assert(t, err != nil && strings.Contains(err.Error(), "too many levels of symbolic links"), "a linked probe file: %v", err)
}
