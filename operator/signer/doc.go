// Package signer is virt-operator's signer of the nodes' migration
// certificates. Each virt-handler asks, through the Kubernetes
// CertificateSigningRequest API with signerName certs.NodeSigner, for a
// certificate naming its node (certs.NodeCSR); handlers show it to each
// other when a guest migrates between their nodes, and each checks that
// the other is the migration's node. The signer approves a request only
// when the apiserver says it came from virt-handler's service account in
// a pod on that very node (the service account token's
// authentication.kubernetes.io/node-name), and signs it with the
// installation's CA; any other request for this signer is denied with the
// reason. A node's credentials then get no other node's certificate.
//
// [Review] is the decision, pure; [Reconciler] applies it with the
// approval and status subresources and the CA's Secret. It leaves
// requests for other signers alone.
package signer
