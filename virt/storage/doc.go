// Package storage plans how a VMI's volumes become guest disks (source type,
// path, detected format, overlays, capacity; pure) and prepares them: disk
// images, cloud-init and config ISOs built in Go, containerDisk overlays and
// hotplug.
//
// It must not import virt/domain (which consumes its plans) or anything above.
//
// Status: the plan types (plan.go) are here for virt/domain; the planner and
// preparation arrive with issue 6.
package storage
