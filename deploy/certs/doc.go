// Package certs issues the certificates virtkit's daemons speak TLS with:
// a self-signed CA ([NewCA]), serving and client certificates it signs
// ([Pair.Issue]), their PEM forms for Secrets ([Pair.CertPEM],
// [Pair.KeyPEM], [Parse]), and the rule of when one is due for renewal
// ([Due]) or no longer fits its request ([Fits]).
//
// Keys are ECDSA P-256. Time comes from the caller, so that tests and
// controllers with an injected clock decide renewals deterministically.
// The package does no I/O: where the PEM goes (files, Secrets) is the
// caller's.
package certs
