package csidriver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/csidriver"
	"github.com/virtkit/virtkit/local/csidriver/fake"
)

// The contract is kubernetes-csi's sanity suite, the one every CSI driver
// answers to. It runs against the driver with the fake mounter and with
// the host's (real bind mounts and loop devices; not under -short), for
// file system and Block volumes.
var suites = []*suite{
	{name: "fake mounter, mount volumes", access: "mount", mounter: func() csidriver.Mounter { return &fake.Mounter{} }},
	{name: "host mounter, mount volumes", access: "mount", host: true},
	{name: "host mounter, block volumes", access: "block", host: true},
}

type suite struct {
	name    string
	access  string
	host    bool
	mounter func() csidriver.Mounter
	cfg     sanity.TestConfig
	root    string
}

var _ = func() bool {
	for _, s := range suites {
		ginkgo.Describe(s.name, func() {
			ginkgo.BeforeEach(func() {
				if s.host && testing.Short() {
					ginkgo.Skip("host mounter: mounts for real; skipped under -short")
				}
			})
			sanity.GinkgoTest(&s.cfg)
		})
	}
	return true
}()

func TestSanity(t *testing.T) {
	for _, s := range suites {
		dir := testenv.Dir(t)
		s.root = filepath.Join(dir, "root")
		var opts []csidriver.Option
		if s.mounter != nil {
			opts = append(opts, csidriver.WithMounter(s.mounter()))
		}
		d, err := csidriver.New(s.root, "node-a", append(opts, csidriver.WithLogger(testr.New(t)))...)
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, "csi.sock")
		lis, err := csidriver.Listen(sock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Serve(ctx, lis) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		s.cfg = sanity.NewTestConfig()
		s.cfg.Address = "unix://" + sock
		s.cfg.TargetPath = filepath.Join(dir, "target")
		s.cfg.StagingPath = filepath.Join(dir, "staging")
		s.cfg.TestVolumeSize = 64 << 20
		s.cfg.TestVolumeExpandSize = 128 << 20
		s.cfg.TestVolumeAccessType = s.access
		s.cfg.IdempotentCount = 2
	}
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "CSI sanity: local.csi.virtkit.io")

	// Nothing is left mounted or attached by the suites' volumes.
	for _, s := range suites {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(mi), filepath.Dir(s.root)) {
			t.Errorf("%s: mounts left under %s", s.name, filepath.Dir(s.root))
		}
		loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
		for _, l := range loops {
			b, _ := os.ReadFile(l)
			if strings.HasPrefix(string(b), s.root) {
				t.Errorf("%s: loop device %s left over %s", s.name, l, strings.TrimSpace(string(b)))
			}
		}
	}
}
