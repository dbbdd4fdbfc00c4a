// Package frontproxy tells who a request from the Kubernetes aggregator
// comes from. An extension API server behind the aggregator (virt-api's
// subresources.kubevirt.io, the eviction webhook) receives the caller's
// identity in headers (X-Remote-User, X-Remote-Group, X-Remote-Extra-*)
// that anyone could set; [Authenticator] trusts them only on a request
// whose TLS client certificate the request-header client CA signed for one
// of the allowed names, the rules of kube-apiserver's --requestheader-*
// flags. [FromConfigMap] reads those settings as the apiserver publishes
// them.
//
// The package is pure: it links no Kubernetes client, so that callers and
// its fuzz target stay small.
package frontproxy
