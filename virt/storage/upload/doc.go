// Package upload is the data path of a DataVolume upload, as CDI's upload
// proxy and upload server make it, with the wire format KubeVirt's
// `virtctl image-upload` speaks:
//
//   - [Issue] and [Verify]: the upload token an UploadTokenRequest returns,
//     naming one claim of one namespace for a few minutes, signed with the
//     issuer's key;
//   - [Proxy]: the HTTPS endpoint users POST an image to (at [Path], with
//     the token as a bearer token); it checks the token, finds the claim's
//     upload server through a [Backends] and streams the body there;
//   - [Server]: the upload server inside the claim's upload pod; it takes
//     one upload from the proxy (whose client certificate it checks) and
//     hands the stream to a [Sink], such as the importer.
//
// It owns the token's format, the paths, and the status codes each side
// answers with. It must not touch the Kubernetes API: where a claim's
// upload server is comes from the Backends the caller supplies.
package upload
