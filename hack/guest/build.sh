#!/usr/bin/env bash
# Builds the virtkit test guest from Debian packages only (busybox-static,
# linux-image-cloud-amd64, qemu-guest-agent, dropbear-bin,
# openssh-sftp-server, syslinux, systemd-boot-efi, mtools, dosfstools, fdisk,
# qemu-utils):
#   OUT/vmlinuz        Debian's cloud kernel, for direct kernel boot
#   OUT/initramfs.gz   busybox userland with rootfs/init as PID 1
#   OUT/disk.qcow2     a disk that boots under BIOS and EFI: MBR, one FAT
#                      partition, syslinux for BIOS and systemd-boot (the
#                      removable-media path EFI/BOOT/BOOTX64.EFI) for EFI,
#                      both loading the same kernel and initramfs
# No loop mounts, no root-only tricks beyond reading the kernel. Reproducible:
# every timestamp is pinned, so two builds give identical files (checked by
# the guest's tests).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../_output/guest}
mkdir -p "$out"
out=$(cd "$out" && pwd)

kver=${KERNEL_VERSION:-$(ls /lib/modules | sort -V | grep cloud-amd64 | tail -n1)}
kernel=/boot/vmlinuz-$kver
qga=/usr/sbin/qemu-ga
sshd=/usr/sbin/dropbear
sftp=/usr/lib/openssh/sftp-server
sdboot=/usr/lib/systemd/boot/efi/systemd-bootx64.efi
for f in "$kernel" /bin/busybox "$qga" "$sshd" "$sftp" "$sdboot" /usr/lib/syslinux/mbr/mbr.bin /usr/lib/syslinux/modules/bios/ldlinux.c32; do
  [[ -r $f ]] || { echo "guest: missing $f; run 'make deps'" >&2; exit 1; }
done
for c in cpio depmod mkfs.vfat mcopy mmd syslinux sfdisk qemu-img faketime ldd; do
  command -v "$c" >/dev/null || { echo "guest: missing command $c; run 'make deps'" >&2; exit 1; }
done

# Pinned time for every file and filesystem entry (FAT cannot store 1970).
export SOURCE_DATE_EPOCH=1577836800 # 2020-01-01T00:00:00Z
export TZ=UTC LC_ALL=C

stamp_key=$( {
  echo "$kver"
  sha256sum "$kernel" /bin/busybox "$qga" "$sshd" "$sftp" "$sdboot"
  ldd "$qga" "$sshd" "$sftp" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | sort -u | xargs sha256sum
  (cd "$here/rootfs" && find . -type f | sort | xargs sha256sum)
  sha256sum <"$here/build.sh"
} | sha256sum | cut -d' ' -f1)
stamp=$out/.guest.stamp
if [[ -f $stamp && $(cat "$stamp") == "$stamp_key" && -f $out/disk.qcow2 && -f $out/initramfs.gz && -f $out/vmlinuz ]]; then
  echo "guest: current in $out"
  exit 0
fi
rm -f "$stamp"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root

# --- initramfs ---------------------------------------------------------------
mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,run,mnt,www,lib/modules}
cp -a "$here/rootfs/." "$root/"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"

# The QEMU guest agent and the SSH server (dropbear, with OpenSSH's SFTP
# server where dropbear looks for one, which today's scp speaks) with the
# shared libraries they link (and the loader), at the paths the loader
# looks in.
mkdir -p "$root/usr/sbin" "$root/usr/lib" "$root/etc/dropbear"
cp "$qga" "$root/usr/sbin/qemu-ga"
cp "$sshd" "$root/usr/sbin/dropbear"
cp "$sftp" "$root/usr/lib/sftp-server"
ldd "$qga" "$sshd" "$sftp" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | sort -u | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

# Kernel modules the init loads, with their dependencies, and a fresh index.
modules=(virtio_pci virtio_blk virtio_scsi sd_mod sr_mod virtio_net isofs vfat
  nls_cp437 nls_iso8859_1 nls_utf8 button evdev virtio_console virtio_rng
  virtio_balloon vmw_vsock_virtio_transport virtio_mem efivarfs)
for m in "${modules[@]}"; do
  modprobe --show-depends -S "$kver" "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
  mkdir -p "$root$(dirname "$ko")"
  cp "$ko" "$root$ko"
done
cp /lib/modules/"$kver"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$root" "$kver"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
(cd "$root" && find . | sort | cpio --quiet -o -H newc --reproducible --owner=0:0) | gzip -9 -n >"$work/initramfs.gz"
cp "$kernel" "$work/vmlinuz"
touch -d "@$SOURCE_DATE_EPOCH" "$work/vmlinuz" "$work/initramfs.gz"

# --- BIOS and EFI disk ----------------------------------------------------------
cmdline="console=ttyS0 loglevel=4 panic=-1"
cat >"$work/syslinux.cfg" <<CFG
DEFAULT virtkit
PROMPT 0
TIMEOUT 0
LABEL virtkit
  KERNEL /vmlinuz
  INITRD /initramfs.gz
  APPEND $cmdline
CFG
# systemd-boot: no menu, the one entry, the same kernel and command line.
printf 'timeout 0\ndefault virtkit.conf\n' >"$work/loader.conf"
printf 'title virtkit\nlinux /vmlinuz\ninitrd /initramfs.gz\noptions %s\n' "$cmdline" >"$work/virtkit.conf"
cp "$sdboot" "$work/BOOTX64.EFI"
touch -d "@$SOURCE_DATE_EPOCH" "$work/syslinux.cfg" "$work/loader.conf" "$work/virtkit.conf" "$work/BOOTX64.EFI"

kib=$(( ($(stat -c %s "$work/vmlinuz") + $(stat -c %s "$work/initramfs.gz")) / 1024 + 4096 ))
part_start=2048 # sectors
part_sectors=$((kib * 2))
disk=$work/disk.raw
truncate -s $(( (part_start + part_sectors) * 512 )) "$disk"
printf 'label: dos\nlabel-id: 0x564b4754\nstart=%d, size=%d, type=6, bootable\n' "$part_start" "$part_sectors" |
  sfdisk --quiet "$disk"
dd if=/usr/lib/syslinux/mbr/mbr.bin of="$disk" bs=440 count=1 conv=notrunc status=none
offset=$((part_start * 512))
# mkfs.vfat and mtools stamp what they write with the current time; freeze it.
pinned=(faketime -f "$(date -u -d "@$SOURCE_DATE_EPOCH" '+%Y-%m-%d %H:%M:%S')")
"${pinned[@]}" mkfs.vfat --offset "$part_start" -h "$part_start" -n VKBOOT -i 564b4754 "$disk" "$kib" >/dev/null
export MTOOLS_SKIP_CHECK=1
"${pinned[@]}" mcopy -m -i "$disk@@$offset" "$work/vmlinuz" "$work/initramfs.gz" "$work/syslinux.cfg" ::/
"${pinned[@]}" mmd -i "$disk@@$offset" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries
"${pinned[@]}" mcopy -m -i "$disk@@$offset" "$work/BOOTX64.EFI" ::/EFI/BOOT/
"${pinned[@]}" mcopy -m -i "$disk@@$offset" "$work/loader.conf" ::/loader/
"${pinned[@]}" mcopy -m -i "$disk@@$offset" "$work/virtkit.conf" ::/loader/entries/
"${pinned[@]}" syslinux --offset "$offset" --install "$disk"
# Compressed clusters: the disk is read once per boot, and 3 MB smaller.
qemu-img convert -c -f raw -O qcow2 "$disk" "$work/disk.qcow2"

install -m 0644 "$work/vmlinuz" "$work/initramfs.gz" "$work/disk.qcow2" "$out/"
echo "$cmdline" >"$out/cmdline"
echo "$stamp_key" >"$stamp"
(cd "$out" && du -bc vmlinuz initramfs.gz disk.qcow2 | tail -n1 | awk '{printf "guest: built in %s (%.1f MB)\n", "'"$out"'", $1/1e6}')
