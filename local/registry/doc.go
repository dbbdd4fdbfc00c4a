// Package registry is the OCI distribution registry virt-local serves on
// loopback, so that image volumes (containerDisks, kernel-boot images) are
// pulled without a network: [Start] serves the registry API (the OCI
// distribution specification's pull, push, tag listing and deletion of
// manifests, no authentication) on a loopback address, default
// [DefaultAddr]; [Registry.Stop] shuts it down gracefully.
//
// Everything pushed persists in Config.Dir, which is an OCI image layout
// (blobs/sha256/HEX, index.json, oci-layout): index.json lists every
// manifest the registry serves, each annotated
// org.opencontainers.image.ref.name=REPOSITORY:TAG (REPOSITORY@DIGEST for a
// manifest pushed by digest), so a registry started again on the same
// folder serves what it served before, and other tools (skopeo's oci:
// transport, go-containerregistry's layout package) read it.
//
// [ContainerDisk] builds the image KubeVirt expects of a containerDisk from
// a disk file, [Push] writes an image to a registry over plain HTTP (a
// no-op when the reference already names the same digest), and
// [PushContainerDisk] does both.
//
// The package owns Config.Dir. It does not pull from other registries, nor
// collect garbage: blobs stay until the folder is removed. local/node's
// RegistryImageStore is its client on a local node. See
// docs/sdk/registry.md.
package registry
