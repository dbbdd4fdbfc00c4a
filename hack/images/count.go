package main

import "io"

// countBytes reads r to its end and returns how many bytes it held.
func countBytes(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }
