// Package importer is CDI's data path as a library: it imports a disk image
// into a DataVolume's target, a file-system claim's disk.img or a block
// device, as CDI's importer pod does.
//
// [Importer.Import] reads a [Source] ([HTTPSource]: http or https, a CA
// bundle, basic auth, extra headers; [RegistrySource]: the disk of a
// containerDisk image in a registry, with a CA bundle and credentials;
// [FileSource]: a file of a mounted volume), undoes gzip or xz compression while it
// streams, and looks at the image's own header ([storage.DetectFormat],
// never at a name):
//
//   - raw (an ISO is raw) streams straight into the [Target], skipping
//     all-zero blocks of a file so that it stays sparse, and a file is then
//     extended to Target.Size;
//   - qcow2, vmdk, vdi, vpc (VHD) and vhdx are downloaded into
//     Target.ScratchDir and converted to raw with qemu-img, which this
//     package runs through a [Runner] (with Target.NoScratch, the import
//     stops with ReasonScratchRequired before writing anything);
//   - anything else (qed, luks, parallels, qcow version 1, an encrypted
//     qcow2...) is refused.
//
// An imported image may not refer to other files: a qcow2 backing file or
// external data file, a VMDK descriptor naming its extents, anything
// qemu-img reports as a backing file are refused before qemu-img reads data,
// as storage does for the images a VMI runs. An image whose virtual size
// exceeds Target.Size is refused, a raw one as soon as its bytes pass that
// size. A failed import leaves no file target behind and no scratch file;
// symbolic links at the target or scratch paths are refused, never
// followed.
//
// Failures are *[Error]s whose [Reason] a controller maps to a DataVolume
// condition; [IsRetryable] tells which are worth another try (a source
// that cannot be reached). The disk size a file-system claim holds is
// CDI's rule, contract.UsableSpace.
//
// [Interface] is what callers consume; virt/storage/importer/fake is an
// in-memory one for their tests, and virt/storage/importer/importertest is
// the contract suite both pass. The package builds with CGO_ENABLED=0 on
// any GOOS; running qemu-img on a file it holds open (/dev/fd/N) needs a
// Unix.
package importer
