// Package cdiconfig is the CDIConfig controller: it keeps the
// cluster-scoped cdi.kubevirt.io/v1beta1 CDIConfig named "config" in being
// (made with the feature gates of CDI's released CDI resource,
// [DefaultFeatureGates]) and writes its status as CDI's does, so that tools reading it (KubeVirt's
// virtctl image-upload looks up the upload proxy's address there) work
// unchanged.
//
// It owns the status of that one object: uploadProxyURL (the spec's
// override, else the address virtkit was told users reach virt-api's upload
// proxy at), filesystemOverhead (the spec's global and per-StorageClass
// values, else CDI's 6 %; an invalid value is left out with a Warning
// event), scratchSpaceStorageClass (the spec's, once a StorageClass of
// that name exists, as CDI's), importProxy and preallocation (the spec's,
// echoed)
// and defaultPodResourceRequirements (CDI's defaults, the spec's CPU and
// memory over them: [PodResources]). It changes no
// spec once made (controllers/cdiresource sets the spec from the CDI
// resource's spec.config), and no other object. [Overhead] is how the DataVolume
// controller reads the overhead a claim of a StorageClass gets,
// [FillingPodResources] and [ProxyEnv] the resources and proxy of the pods
// that fill claims, and [HonorsWaitForFirstConsumer] whether a DataVolume
// waits for its claim's first consumer.
//
// See docs/datavolumes.md.
package cdiconfig
