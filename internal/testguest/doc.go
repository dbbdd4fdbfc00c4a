// Package testguest knows the small guest that hack/guest builds from Debian
// packages: where its files are, what it prints on its serial console, and a
// domain document that boots it. Tests reach it through internal/testenv;
// `make run` uses it directly until virt-local boots VMs from manifests.
//
// What the guest does (hack/guest/rootfs/init): prints "VIRTKIT-GUEST-BOOTED
// kernel=..." on ttyS0; starts the QEMU guest agent when the domain has its
// channel ("VIRTKIT-AGENT port=vportNpM"), which prints "VIRTKIT-FSFREEZE
// freeze" and "... thaw" around a file system freeze; brings up every NIC
// with DHCP ("VIRTKIT-NET ethN ip=..."), also one plugged later
// ("VIRTKIT-NET ethN added"; "VIRTKIT-NET ethN removed" when one goes);
// reads a NoCloud (label cidata) or ConfigDrive (label config-2) disk, takes
// its host name from meta-data and runs a user-data shell script
// ("VIRTKIT-USERDATA-START" ... "VIRTKIT-USERDATA-DONE rc=N"); writes and reads
// back a marker on each blank or already-marked writable data disk
// ("VIRTKIT-DISK vdb previous=N wrote=N+1 readback=ok"); serves HTTP on port
// 80 with its host name and heartbeat; prints "VIRTKIT-READY", then
// "VIRTKIT-HEARTBEAT N" once a second; on an ACPI power button press prints
// "VIRTKIT-POWEROFF" and powers off.
package testguest
