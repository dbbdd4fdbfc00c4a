//go:build tools

// Package promtool pins Prometheus' promtool, which `make tools` builds into
// _output/tools to check virtkit's alerting rules and run their unit tests
// (deploy/testdata/alerts). Prometheus' dependencies stay in this module,
// out of virtkit's.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
