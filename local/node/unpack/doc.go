// Package unpack applies an OCI image's layers to a folder as a container
// runtime does (the local node's way to give a pod an image's files): the
// lowest layer first, whiteouts and opaque folders of the layers below,
// owners (as root), modes (folders' once every layer is written), links
// and hard links, and nothing outside the folder: every path is resolved in
// an os.Root of it, so ".." and links (the image's or ones a layer made)
// cannot lead out. Device nodes and FIFOs are not made.
//
// unpacktest makes layers and images of listed entries for tests.
package unpack
