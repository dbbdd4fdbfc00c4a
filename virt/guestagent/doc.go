// Package guestagent speaks to the QEMU guest agent (qemu-ga) through a
// domain's agent channel and turns its answers into KubeVirt's types: the
// agent's version and commands, the guest's OS, host name and time zone
// (guestosinfo), its logged-in users (userlist), its mounted file systems
// (filesystemlist), its NICs' names and addresses, and freezing and thawing
// its file systems for snapshots, and running a command in the guest
// (exec probes).
//
// It owns the agent's wire (the JSON of each guest-* command) and the
// mapping to kubevirt.io/api types; it does not own when to ask (the
// handler polls) or where answers go (the VMI's status, the subresources).
// The agent is reached through a [Commander], which domain.Manager is.
// Replies are the guest's words: each list is bounded and every string
// kept as text, never used as a path or command.
//
// Pure: no cgo, builds on every GOOS.
package guestagent
