// Package accesscred owns a VMI's access credentials
// (spec.accessCredentials) as KubeVirt propagates them through the QEMU
// guest agent: where the launcher pod holds each credential's Secret
// (Dir), which credentials the agent propagates and what they ask for
// (Read: each listed user's authorized SSH keys, each user's password),
// and setting them in the guest (Apply: a user's keys replaced by exactly
// those of its Secrets, each password set); and the keys that cloud-init
// propagates instead (CloudInitKeys), which virt/storage writes into the
// cloud-init disk's meta-data.
//
// It does not own when to set them (the handler does, while the agent
// answers) nor the agent's wire (virt/guestagent). Secrets arrive as the
// pod's files, read through a function the caller gives, which bounds
// them; what is read is never logged.
//
// Pure: no cgo, builds on every GOOS.
package accesscred
