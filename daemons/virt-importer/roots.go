package main

// The importer's image carries no system certificate store (its packages
// are qemu-utils and xz-utils), so an https or registry source without a
// certConfigMap would trust nothing. Mozilla's roots, built in, are used
// only where the system has none: on a host with a store (virt-local runs
// the importer as a host process) the host's store is used, as before.
import _ "golang.org/x/crypto/x509roots/fallback"
