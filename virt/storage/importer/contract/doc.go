// Package contract is the DataVolume controller-importer contract as plain
// values: where an importer pod finds its claim, its CA bundle and its
// credentials, the flags of the virt-importer binary, the termination
// message it leaves, and the metric it reports progress with.
//
// It owns these values and nothing else, and imports only the standard
// library, so that controllers/datavolume (which renders the importer pod
// and reads its outcome) and daemons/virt-importer (which parses the flags
// and writes the outcome) share them without either pulling in the other's
// dependencies. See docs/datavolumes.md.
package contract
