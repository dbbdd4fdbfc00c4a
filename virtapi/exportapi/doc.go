// Package exportapi is the export proxy: the server of VirtualMachineExports'
// external links. [NewProxyServer] serves virt/storage/export.Proxy on a
// port of its own, and [Backends] tells the proxy where an export's server
// is: the export's server pod (the one the export controller made and
// controls, ready, with an IP), its certificate checked against the export
// CA for the export's Service name.
//
// It must not touch exports or pods beyond reading them: the export
// controller (controllers/export) owns them.
package exportapi
