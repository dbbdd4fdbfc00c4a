package handler

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// migrationPKI is a CA and, by name, files of certificates it signed.
type migrationPKI struct {
	t   *testing.T
	dir string
	ca  *certs.Pair
}

func newMigrationPKI(t *testing.T) *migrationPKI {
	ca, err := certs.NewCA("kubevirt.io", time.Now(), 24*time.Hour)
	assert.NilError(t, err)
	return &migrationPKI{t: t, dir: t.TempDir(), ca: ca}
}

// source returns the certificate r issued by signer (p's CA when nil) and
// p's CA bundle, as files read by certfiles.
func (p *migrationPKI) source(name string, r certs.Request, signer *certs.Pair) *certfiles.Source {
	p.t.Helper()
	if signer == nil {
		signer = p.ca
	}
	leaf, err := signer.Issue(r, time.Now())
	assert.NilError(p.t, err)
	cert, key, ca := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key"), filepath.Join(p.dir, "ca.crt")
	assert.NilError(p.t, os.WriteFile(cert, leaf.CertPEM(), 0o600))
	assert.NilError(p.t, os.WriteFile(key, leaf.KeyPEM(), 0o600))
	assert.NilError(p.t, os.WriteFile(ca, p.ca.CertPEM(), 0o600))
	s, err := certfiles.New(cert, key, ca)
	assert.NilError(p.t, err)
	return s
}

func (p *migrationPKI) node(node string) *certfiles.Source {
	return p.source(node, certs.NodeRequest(node, time.Hour*2), nil)
}

// incomingVMI is a VMI migrating from node a to node b.
func incomingVMI(disableTLS bool) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "ns", "vm", "0e0e0e0e-0000-4000-8000-00000000000b"
	vmi.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{
		MigrationUID: "0d0d0d0d-0000-4000-8000-00000000000a", SourceNode: "a", TargetNode: "b",
		MigrationConfiguration: &virtv1.MigrationConfiguration{DisableTLS: &disableTLS},
	}
	return vmi
}

// targetFor is the MigrationTarget of vmi's migration at addr.
func targetFor(vmi *virtv1.VirtualMachineInstance, addr string) MigrationTarget {
	ms := vmi.Status.MigrationState
	return MigrationTarget{Migration: ms.MigrationUID, VMI: vmi.UID, Namespace: vmi.Namespace, Name: vmi.Name, Pod: "p1",
		Node: ms.TargetNode, Address: addr, DisableTLS: *ms.MigrationConfiguration.DisableTLS}
}

// serveTarget runs the migration server of node b with certificates c,
// checking connections against vmi as openIncoming does and connecting
// them to the launcher folder dst; it returns its address.
func serveTarget(t *testing.T, c MigrationCertificates, vmi *virtv1.VirtualMachineInstance, dst launcher.Layout) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	s := &migrationServer{certs: c, log: testr.New(t), pending: make(chan struct{}, maxPendingMigrationConns),
		open: func(ctx context.Context, peer migrationPeer, h migrationHello) (net.Conn, error) {
			if err := incomingAllowed(vmi, "b", peer, h); err != nil {
				return nil, err
			}
			return dialChannel(ctx, dst, h.Channel)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		assert.NilError(t, <-done)
	})
	return ln.Addr().String()
}

// The source's proxy reaches the target launcher through the target
// node's handler over mutual TLS: every channel carries its bytes both
// ways with half closes, each side having checked the other's node.
func TestMigrationOverTLS(t *testing.T) {
	run := testenv.Dir(t)
	pki := newMigrationPKI(t)
	vmi := incomingVMI(false)
	src := launcher.Layout{Root: filepath.Join(run, "src")}
	dst := launcher.Layout{Root: contract.PodFolder(filepath.Join(run, "b"), "p1")}
	assert.NilError(t, os.Mkdir(src.Root, 0o755))
	fakeTargetLauncher(t, dst)
	addr := serveTarget(t, pki.node("b"), vmi, dst)

	var dialErrs []error
	p, err := startProxy(openFolder(t, src), targetFor(vmi, addr), TCPMigrationDialer{Certificates: pki.node("a")},
		func(err error) { dialErrs = append(dialErrs, err) })
	assert.NilError(t, err)
	roundTrip(t, src)
	assert.NilError(t, p.Close())
	assert.Equal(t, len(dialErrs), 0, "%v", dialErrs)
}

// With migrations.disableTLS the channels are plain TCP; without it a
// plain connection is refused.
func TestMigrationPlainOnlyWhenTLSIsDisabled(t *testing.T) {
	run := testenv.Dir(t)
	pki := newMigrationPKI(t)
	dst := launcher.Layout{Root: contract.PodFolder(filepath.Join(run, "b"), "p1")}
	fakeTargetLauncher(t, dst)

	plain := incomingVMI(true)
	addr := serveTarget(t, pki.node("b"), plain, dst)
	c, err := TCPMigrationDialer{}.DialTarget(context.Background(), targetFor(plain, addr), ChannelMemory)
	assert.NilError(t, err)
	_, isTLS := c.(*tls.Conn)
	assert.Assert(t, !isTLS, "disableTLS: the connection is plain")
	c.Close()

	required := incomingVMI(false)
	addr = serveTarget(t, pki.node("b"), required, dst)
	forced := targetFor(required, addr)
	forced.DisableTLS = true // a source that tries plain TCP anyway
	_, err = TCPMigrationDialer{}.DialTarget(context.Background(), forced, ChannelMemory)
	assert.ErrorContains(t, err, "refused by the target: migration "+string(required.Status.MigrationState.MigrationUID)+
		": a plain connection, but migrations.disableTLS is not set: TLS is required")
}

// A peer whose certificate is not the migration's node is refused, on
// either side, before any byte of the guest moves.
func TestMigrationRefusesTheWrongNode(t *testing.T) {
	run := testenv.Dir(t)
	pki := newMigrationPKI(t)
	vmi := incomingVMI(false)
	dst := launcher.Layout{Root: contract.PodFolder(filepath.Join(run, "b"), "p1")}
	fakeTargetLauncher(t, dst)
	addr := serveTarget(t, pki.node("b"), vmi, dst)
	other, err := certs.NewCA("kubevirt.io", time.Now(), 24*time.Hour)
	assert.NilError(t, err)
	day := 2 * time.Hour

	for name, tc := range map[string]struct {
		source *certfiles.Source
		want   string
	}{
		"another node's certificate": {pki.node("c"), `refused by the target: migration 0d0d0d0d-0000-4000-8000-00000000000a comes from node "a", and the certificate names node "c"`},
		"virt-api's client certificate": {pki.source("virt-api", certs.Request{CommonName: "kubevirt.io:system:client:virt-handler", Client: true, Validity: day}, nil),
			`refused by the target: certs: "kubevirt.io:system:client:virt-handler" is not a node's migration certificate`},
		"a node certificate of another CA": {pki.source("a-other", certs.NodeRequest("a", day), other), "tls: unknown certificate authority"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := TCPMigrationDialer{Certificates: tc.source}.DialTarget(context.Background(), targetFor(vmi, addr), ChannelLibvirt)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	// A target whose certificates come with no CA bundle cannot check a
	// source: it refuses every TLS connection.
	leaf, err := pki.ca.Issue(certs.NodeRequest("b", day), time.Now())
	assert.NilError(t, err)
	cf, kf := filepath.Join(pki.dir, "b-noca.crt"), filepath.Join(pki.dir, "b-noca.key")
	assert.NilError(t, os.WriteFile(cf, leaf.CertPEM(), 0o600))
	assert.NilError(t, os.WriteFile(kf, leaf.KeyPEM(), 0o600))
	noCA, err := certfiles.New(cf, kf, "")
	assert.NilError(t, err)
	blind := serveTarget(t, noCA, vmi, dst)
	_, err = TCPMigrationDialer{Certificates: pki.node("a")}.DialTarget(context.Background(), targetFor(vmi, blind), ChannelLibvirt)
	assert.ErrorContains(t, err, "refused by the target: TLS: no client certificate")

	// A server that is not the target node: the source refuses it.
	imposter := serveTarget(t, pki.node("c"), vmi, dst)
	_, err = TCPMigrationDialer{Certificates: pki.node("a")}.DialTarget(context.Background(), targetFor(vmi, imposter), ChannelLibvirt)
	assert.ErrorContains(t, err, "TLS: ")
	assert.ErrorContains(t, err, certs.NodeName("b"))
}

// What a hello may say, and which migrations a peer may join.
func TestIncomingAllowed(t *testing.T) {
	hello := helloOf(targetFor(incomingVMI(false), "x:1"), ChannelMemory)
	for name, tc := range map[string]struct {
		edit func(*virtv1.VirtualMachineInstance)
		peer migrationPeer
		want string
	}{
		"the source node": {peer: migrationPeer{Node: "a"}},
		"another uid":     {edit: func(v *virtv1.VirtualMachineInstance) { v.UID = "other" }, peer: migrationPeer{Node: "a"}, want: "uid other, not"},
		"another migration": {edit: func(v *virtv1.VirtualMachineInstance) { v.Status.MigrationState.MigrationUID = "m2" },
			peer: migrationPeer{Node: "a"}, want: "is not the VMI's"},
		"no migration": {edit: func(v *virtv1.VirtualMachineInstance) { v.Status.MigrationState = nil }, peer: migrationPeer{Node: "a"}, want: "is not the VMI's"},
		"to another node": {edit: func(v *virtv1.VirtualMachineInstance) { v.Status.MigrationState.TargetNode = "c" },
			peer: migrationPeer{Node: "a"}, want: `goes to node "c", not to this node b`},
		"over":         {edit: func(v *virtv1.VirtualMachineInstance) { v.Status.MigrationState.Failed = true }, peer: migrationPeer{Node: "a"}, want: "is over"},
		"plain":        {peer: migrationPeer{Plain: true}, want: "TLS is required"},
		"another node": {peer: migrationPeer{Node: "c"}, want: `the certificate names node "c"`},
	} {
		t.Run(name, func(t *testing.T) {
			vmi := incomingVMI(false)
			if tc.edit != nil {
				tc.edit(vmi)
			}
			err := incomingAllowed(vmi, "b", tc.peer, hello)
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// A hello is bounded and checked: too long, another version, a channel
// that is not one.
func TestMigrationHello(t *testing.T) {
	var h migrationHello
	err := readLine(strings.NewReader(strings.Repeat("x", maxMigrationLine+1)+"\n"), &h)
	assert.ErrorContains(t, err, "longer than 4096 bytes")
	h = helloOf(MigrationTarget{Migration: "m", VMI: "v", Namespace: "ns", Name: "vm"}, "console")
	assert.ErrorContains(t, h.check(), `channel "console": not one of`)
	h = helloOf(MigrationTarget{Migration: "m", VMI: "v", Namespace: "ns", Name: "vm"}, ChannelDisks)
	h.Version = 2
	assert.ErrorContains(t, h.check(), "version 2: this handler speaks version 1")
	h = migrationHello{Version: migrationProtocol, Channel: ChannelDisks}
	assert.ErrorContains(t, h.check(), "all are required")
}
