package csidriver

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// safeName is a CSI name used as an ID as it is: what Kubernetes' sidecars
// send (pvc-<uid>, snapshot-<uid>) matches it. It cannot start with the
// prefix of a hashed ID.
var safeName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,127}$`)

// hashedPrefix starts the ID of a name that is not safe as a file name.
const hashedPrefix = "x-"

// idOf is the ID of the volume or snapshot CSI calls name: the name itself
// when it is a safe file name, else a digest of it. The same name always
// has the same ID, which makes creation idempotent without an index.
func idOf(name string) string {
	if safeName.MatchString(name) && (len(name) < len(hashedPrefix) || name[:len(hashedPrefix)] != hashedPrefix) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return hashedPrefix + hex.EncodeToString(sum[:16])
}

// validID reports whether id can be an ID idOf made (and so a folder name
// under the root that leaves no folder).
func validID(id string) bool { return safeName.MatchString(id) }
