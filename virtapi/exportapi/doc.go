// Package exportapi is virt-api's share of VirtualMachineExports: it
// tells the export proxy (virt/storage/export.Proxy) where an export's
// server is. [Backends] finds the export's server pod (the one the export
// controller made and controls, ready, with an IP) and checks its
// certificate against the export CA for the export's Service name.
//
// It must not touch exports or pods beyond reading them: the export
// controller (controllers/export) owns them.
package exportapi
