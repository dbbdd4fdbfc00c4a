package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit/virt/confined"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/guestagent"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// maxReadyFile bounds the ready file's read: it holds one libvirt URI.
const maxReadyFile = 4 << 10

// vmiProbe is one exec or guestAgentPing probe of a VMI (KubeVirt's
// virt-probe): it asks the guest agent of the domain that the launcher
// whose folder is dir runs, within timeout. ping asks for guest-ping;
// otherwise command runs in the guest and must exit 0. A nil error is a
// probe that passed.
func vmiProbe(ctx context.Context, dir, domainName string, timeout time.Duration, ping bool, command []string) error {
	if !ping && len(command) == 0 {
		return fmt.Errorf("--%s needs a command after --", contract.FlagGuestExec)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	uri, err := readyURI(dir)
	if err != nil {
		return err
	}
	m, err := domainlibvirt.New(ctx, uri)
	if err != nil {
		return err
	}
	defer m.Close()
	if ping {
		return m.GuestAgentPing(ctx, domainName)
	}
	return guestExec(ctx, m, domainName, command)
}

// guestExec runs command in the guest and fails unless it exits 0.
func guestExec(ctx context.Context, c guestagent.Commander, domainName string, command []string) error {
	r, err := guestagent.Exec(ctx, c, domainName, command[0], command[1:])
	switch {
	case err != nil:
		return err
	case r.Signal != 0:
		return fmt.Errorf("%s in the guest was killed by signal %d", command[0], r.Signal)
	case r.ExitCode != 0:
		return fmt.Errorf("%s in the guest exited with %d", command[0], r.ExitCode)
	}
	return nil
}

// readyURI is the libvirt URI the launcher published in its ready file:
// absent while the launcher is not ready for a domain.
func readyURI(dir string) (string, error) {
	root, err := confined.Open(dir, confined.NoSymlinks)
	if err != nil {
		return "", err
	}
	defer root.Close()
	b, err := root.ReadFile(contract.ReadyFile, maxReadyFile)
	if err != nil {
		return "", fmt.Errorf("the launcher is not ready: %w", err)
	}
	uri := strings.TrimSpace(string(b))
	if uri == "" {
		return "", fmt.Errorf("the launcher is not ready: %s is empty", contract.ReadyFile)
	}
	return uri, nil
}
