// Package certfiles serves TLS from certificate files that change under a
// running process, such as a Secret volume the kubelet updates when
// virt-operator renews a certificate: each handshake uses the files'
// current content, read again at most once per interval, so a daemon
// takes a renewed certificate and CA bundle without a restart. Open
// connections keep the certificate they were made with; new ones get the
// new one.
//
// [Source] holds a key pair and, optionally, a CA bundle that checks the
// peer; [Source.ServerConfig] and [Source.ClientConfig] are tls.Configs
// that read it at each handshake. Files that turn unreadable or invalid
// keep the last good content and report the error to the logger.
package certfiles
