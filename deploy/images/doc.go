// Package images builds the OCI images of virtkit's daemons without Docker
// or any container runtime: each image is the daemon's Go binary plus, where
// the daemon needs them, the files of the Debian packages it runs with
// (libvirt and QEMU for virt-launcher, the libvirt client library for
// virt-handler, the C library for the others), unpacked as dpkg would and
// assembled with go-containerregistry.
//
// [Daemons] is the catalog: plain data saying, per image, which binaries,
// which packages, which user and which entry point. A [Builder] turns one
// [Image] into a v1.Image. Its effects sit behind [Packages] (resolve
// package names to exact versions with their dependencies, and open a
// package's files); [APT] implements it with apt-get and dpkg-deb and keeps
// the downloaded packages in a cache folder.
//
// Builds are reproducible: every time stamp is fixed, owners and modes come
// from the packages, entries are ordered, and compression is deterministic,
// so the same binaries and the same package versions give the same image
// digest. Each image records the exact package versions it carries in
// /usr/share/virtkit/packages.
//
// The package owns the image layout (users, folders, where binaries go). It
// does not push: hack/images writes an OCI image layout and pushes to a
// registry with go-containerregistry. See docs/images.md.
package images
