// Package certrequest keeps a key and a certificate that a Kubernetes
// signer issued through the CertificateSigningRequest API, in files of a
// private folder, and asks for a new one before it runs out: virt-handler
// keeps its node's migration certificate so (signer certs.NodeSigner,
// granted by virt-operator's operator/signer), as the kubelet keeps its
// own. A [Requester] is also the TLS source of its certificate (through
// deploy/certs/certfiles, which reads the files again as they are
// renewed), and until the first certificate is issued it refuses
// handshakes rather than blocking its caller.
package certrequest
