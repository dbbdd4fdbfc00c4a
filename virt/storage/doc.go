// Package storage plans how a VMI's volumes become guest disks and prepares
// them in the launcher pod.
//
// [Manager.Plan] takes the VMI and facts about the pod ([Pod]: where each
// claim is mounted, block devices, volume modes, read-only access,
// capacities, cloud-init secrets) and returns a [Plan], one [DiskPlan] per
// volume a disk uses: file or block source, path, format detected from the
// image's header (qcow2 magic "QFI\xfb", else raw; other known formats are
// refused), read-only source, overlay base, capacity. It reads headers
// through an [Inspector] and writes nothing; a missing file or device, an
// unknown or unsafe format and an image larger than its claim are
// *[VolumeError]s naming the volume, all reported together.
//
// [Manager.Prepare] creates what the plan marks Create, all or nothing:
// a sparse disk.img in a claim that has none, emptyDisk qcow2 images,
// qcow2 overlays on read-only bases (ephemeral, containerDisk), NoCloud and
// ConfigDrive ISOs, and ISOs of configMap, secret, serviceAccount and
// downwardAPI folders. Qcow2 headers ([WriteQCOW2]) and ISO 9660 images
// ([WriteISO], github.com/kdomanski/iso9660) are written in Go: no
// qemu-img, no genisoimage. [Manager.Release] removes the images that live
// only as long as the VMI.
//
// virt/storage/hotplug attaches hotpluggable volumes to a running domain;
// virt/storage/fake is an in-memory [Interface] for callers' tests.
//
// It must not import virt/domain (which consumes its plans) or anything
// above; it builds with CGO_ENABLED=0.
package storage
