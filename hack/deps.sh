#!/usr/bin/env bash
# Installs what virtkit's builds and tests need from Debian packages, idempotently.
# Fails with the name of whatever could not be installed.
set -euo pipefail

packages=(
  # hypervisor: a private libvirtd per launcher, QEMU under software emulation
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
  # EFI firmware (OVMF) and the vTPM emulator with its setup and local CA tools
  ovmf swtpm swtpm-tools
  # cgo bindings for libvirt.org/go/libvirt
  libvirt-dev pkg-config gcc
  # libvirt's schema validator needs xmllint
  libxml2-utils
  # test guest: busybox userland, Debian's cloud kernel, initramfs and disk image tools, and
  # the BIOS (syslinux) and EFI (systemd-boot) loaders on its disk
  busybox-static linux-image-cloud-amd64 cpio xz-utils syslinux syslinux-common systemd-boot-efi mtools dosfstools fdisk faketime
  # the test guest's QEMU guest agent, SSH and SFTP servers (copied in with their libraries)
  qemu-guest-agent dropbear-bin openssh-sftp-server
  # virtctl ssh and scp run the local OpenSSH client; the tests make keys with ssh-keygen
  openssh-client
  # cloud-init media cross-checks and network plumbing
  genisoimage xorriso nftables iptables iproute2 util-linux procps
  # a real kubelet node: the OCI runtime under containerd
  runc
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps: missing Debian packages: ${missing[*]}; run 'make deps' as root" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get update -qq >/tmp/virtkit-apt-update.log 2>&1; then
    echo "deps: apt-get update failed; log: /tmp/virtkit-apt-update.log" >&2
    exit 1
  fi
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/virtkit-apt-install.log 2>&1; then
    for p in "${missing[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        echo "deps: could not install Debian package $p" >&2
    done
    echo "deps: log: /tmp/virtkit-apt-install.log" >&2
    exit 1
  fi
fi

# libvirt's qemu driver refuses to start without this user and group, even when
# qemu.conf runs guests as root.
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
getent group kvm >/dev/null || groupadd --system kvm
getent passwd libvirt-qemu >/dev/null || useradd --system --no-create-home -g kvm libvirt-qemu

# Debian's packaged libvirtd must not be the one our tests talk to; the package
# may have started nothing (no systemd), but make sure.
echo "deps: ok"
