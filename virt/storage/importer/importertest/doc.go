// Package importertest is the contract suite of importer.Interface: one
// set of imports every implementation must get right, run against the real
// Importer (over HTTPS, into a temporary folder) and the fake
// (virt/storage/importer/fake) from their own tests, as
// virt/storage/storagetest is for storage.
//
// An implementation's test calls Run with a function returning a Harness:
// the Interface plus how to serve it an image. Each case says what the
// import must give (a Want); an implementation that reads no bytes, the
// fake, scripts it when the image is served, one that does ignores it and
// is held to it. Capabilities turn on the checks of what is on disk.
//
// It also gives the images the suite uses (Disk, Gzip, XZ, QCOW2) and
// CheckDisk, for an implementation's own tests of formats the suite cannot
// make without qemu-img.
//
// It builds with CGO_ENABLED=0 and runs no program.
package importertest
