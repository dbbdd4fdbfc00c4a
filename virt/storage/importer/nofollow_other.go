//go:build !unix

package importer

// oNoFollow is not available: the Lstat check before each open is all.
const oNoFollow = 0
