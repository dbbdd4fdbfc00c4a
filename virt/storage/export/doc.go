// Package export is the data path of a KubeVirt VirtualMachineExport
// (export.kubevirt.io/v1beta1), with the wire format KubeVirt's export
// server and `virtctl vmexport` speak:
//
//   - the names of what an export makes ([PodName], [ServiceName],
//     [TokenSecretName], [CertSecretName]), its labels and ports;
//   - the URL layout ([RawPath], [GzipPath], [DirPath], [ArchivePath],
//     [ManifestPath], [ReadyPath]) and which formats a volume is served in
//     ([Formats]: a disk image as raw and gzip, any other file system as a
//     folder and a tar.gz);
//   - [Links]: the status.links entry of an export served at a base URL;
//   - [Config]: what an export server serves, and its encoding in the
//     server pod's environment ([Config.Env], [ConfigFromEnv]);
//   - [Server]: the HTTPS server inside the export pod. Every path but
//     readiness needs the export's token (the rule of which is
//     virt/storage/export/token's), in the x-kubevirt-export-token
//     header or query parameter; a disk image is served as it is (with
//     ranges) and gzip-compressed on the fly, a folder as a listing and
//     as a tar.gz stream. Nothing below a volume's folder is followed
//     through a symbolic link: a claim's content is the user's.
//
// It must not touch the Kubernetes API: the export controller in
// controllers/export decides what to export and writes the objects. It
// builds without cgo on any GOOS. See docs/export.md.
package export
