package contract

// Where an importer pod's volumes sit, as CDI's importer pods have them.
const (
	// DataDir is where a file-system claim is mounted; the image becomes
	// DataDir/DiskImage.
	DataDir = "/data"
	// DiskImage is the disk file of a file-system claim, as the handler
	// reads it (virt/storage).
	DiskImage = "disk.img"
	// BlockDevice is where a block claim appears in the pod.
	BlockDevice = "/dev/cdi-block-volume"
	// SourceDir is where a file source's volume is mounted, read-only: a
	// cloned claim (its disk at SourceDir/DiskImage) or a containerDisk
	// image (its disk in SourceDir/ImageDiskDir).
	SourceDir = "/source"
	// ImageDiskDir is the folder of a containerDisk image holding its disk.
	ImageDiskDir = "disk"
	// CertsDir holds the files of the ConfigMap a source's certConfigMap
	// names: every PEM file in it is a trusted CA.
	CertsDir = "/certs"
	// ProxyCertsDir holds the files of the copy of the ConfigMap the
	// CDIConfig's importProxy.trustedCAProxy names: PEM CAs of the proxy,
	// trusted besides the source's, as CDI's importer trusts them.
	ProxyCertsDir = "/proxycerts"
	// ScratchDir is where the scratch claim is mounted, CDI's scratch
	// space: an image that cannot be streamed is downloaded there before
	// conversion, into a file the importer removes. A pod without it is
	// given no --scratch and ends with Outcome.ScratchRequired when it
	// needs one.
	ScratchDir = "/scratch"
)

// Environment variables carrying a source's basic-auth credentials, from
// the keys of the Secret its secretRef names (CDI's keys).
const (
	EnvAccessKeyID = "IMPORTER_ACCESS_KEY_ID"
	EnvSecretKey   = "IMPORTER_SECRET_KEY"
	// SecretKeyAccessKeyID and SecretKeySecretKey are the keys of that Secret.
	SecretKeyAccessKeyID = "accessKeyId"
	SecretKeySecretKey   = "secretKey"
)

// Binary is the importer's program, the command of the importer container.
const Binary = "virt-importer"

// UploadPort is where an upload source's server listens (HTTPS).
const UploadPort = 8444

// UploadTLSDir holds an upload server's TLS files, from the Secret the
// controller makes for it: tls.crt and tls.key (its serving certificate,
// which the controller also publishes on the pod, as AnnUploadServerCert,
// for the proxy to pin) and ca.crt (the CAs of the proxy's client
// certificate).
const UploadTLSDir = "/upload-tls"

// CloneTLSDir holds the TLS files of a clone's source pod (SourceSend),
// from a Secret in the source's namespace: tls.crt and tls.key (its client
// certificate, which the target's upload server trusts) and server.crt
// (the upload server's certificate, the only one it accepts).
const CloneTLSDir = "/clone-tls"

// CloneServerCertKey is the key of the upload server's certificate in a
// clone source's Secret.
const CloneServerCertKey = "server.crt"

// AnnUploadServerCert is the pod annotation holding the upload server's
// certificate (PEM): the proxy accepts no other from that pod.
const AnnUploadServerCert = "upload.virtkit.io/server-certificate"

// ProgressPort is where the importer serves its progress metric over HTTP.
const ProgressPort = 8443

// ProgressMetric is the importer's progress in percent, labelled with
// the DataVolume's UID (ownerUID), as CDI's importer names it.
const ProgressMetric = "kubevirt_cdi_import_progress_total"
