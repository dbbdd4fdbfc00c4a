//go:build !unix

package storage

const nonBlock = 0
