package spec

import virtv1 "kubevirt.io/api/core/v1"

// Hotpluggable reports whether v is a volume of the kinds hotplug adds and
// removes on a running VMI: a persistentVolumeClaim or dataVolume marked
// hotpluggable.
func Hotpluggable(v *virtv1.Volume) bool {
	return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable) ||
		(v.DataVolume != nil && v.DataVolume.Hotpluggable)
}
