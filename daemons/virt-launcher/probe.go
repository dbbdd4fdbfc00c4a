package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	"libvirt.org/go/libvirtxml"

	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// kvmPresent reports whether the node has /dev/kvm; it only looks.
func kvmPresent() bool {
	_, err := os.Stat("/dev/kvm")
	return err == nil
}

// probeVirtType is the domain type the probe asks about for the flag's
// value: kvm and qemu as they are, auto as present says.
func probeVirtType(flagValue string, present func() bool) (string, error) {
	switch flagValue {
	case contract.VirtTypeKVM, contract.VirtTypeQEMU:
		return flagValue, nil
	case contract.VirtTypeAuto:
		if present() {
			return contract.VirtTypeKVM, nil
		}
		return contract.VirtTypeQEMU, nil
	}
	return "", fmt.Errorf("--%s %q: want %s, %s or %s", contract.FlagVirtType, flagValue, contract.VirtTypeKVM, contract.VirtTypeQEMU, contract.VirtTypeAuto)
}

// probeTimeout bounds the probe: libvirtd's start, QEMU's capability probe
// (about 2 s under emulation here) and two queries.
const probeTimeout = 2 * time.Minute

// probeHostCPU is the launcher's node labeller mode: a private libvirtd
// says what a guest's CPU can be on this node (contract.HostCPUCapsFile and
// contract.HostCPUBaselineFile in out), for a domain of virtType. Only
// x86_64 is probed, as in KubeVirt; elsewhere nothing is written.
func probeHostCPU(ctx context.Context, out, virtType string, lv libvirtd.Config, log logr.Logger) (err error) {
	if runtime.GOARCH != "amd64" {
		log.Info("no host CPU probe on this architecture", "arch", runtime.GOARCH)
		return nil
	}
	virtType, err = probeVirtType(virtType, kvmPresent)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if lv.Dir, err = os.MkdirTemp("", "probe"); err != nil {
		return err
	}
	defer os.RemoveAll(lv.Dir)
	d, err := libvirtd.Start(ctx, lv, libvirtd.WithLogger(log.WithName("libvirtd")))
	if err != nil {
		return err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, d.Stop(stop))
	}()
	m, err := domainlibvirt.New(ctx, d.URI())
	if err != nil {
		return err
	}
	defer m.Close()
	caps, baseline, err := m.HostCPU(ctx, "x86_64", "q35", virtType)
	if err != nil {
		return err
	}
	doc, err := caps.Marshal()
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(out, contract.HostCPUCapsFile), doc); err != nil {
		return err
	}
	if baseline == nil {
		log.Info("the host-model CPU mode is not supported: no baseline", "virtType", virtType)
		return nil
	}
	if doc, err = baseline.Marshal(); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(out, contract.HostCPUBaselineFile), doc); err != nil {
		return err
	}
	log.Info("host CPU probed", "virtType", virtType, "hostModel", modelName(baseline), "features", len(baseline.Features))
	return nil
}

// writeAtomic writes doc to path through a temporary file renamed over it.
func writeAtomic(path, doc string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(doc)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// modelName is cpu's model name, "" for none.
func modelName(cpu *libvirtxml.DomainCPU) string {
	if cpu.Model == nil {
		return ""
	}
	return cpu.Model.Value
}
