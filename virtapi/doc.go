// Package virtapi is virt-api as a library: one http.Handler that serves
// the mutating and validating webhooks (package admission, over virt/spec)
// and the subresources.kubevirt.io aggregated API (package subresources),
// on the one TLS port the apiserver calls. daemons/virt-api serves it as a
// process; daemons/virt-local serves it in-process.
//
// It owns only the composition: which paths go where, and the TLS settings
// that let the aggregator present its front-proxy certificate while webhook
// calls come without one. It must not import virt/ or controllers/ beyond
// reading their configuration types.
package virtapi
