//go:build tools

// Package prometheus pins the Prometheus server and promtool on their own:
// Prometheus's module requires its own client-go and OpenTelemetry lines,
// which would move the shared tools module's Kubernetes pins. The tests
// run bin/promtool on the chart's alert rules and bin/prometheus against
// the operator on the local platform (docs/operations/monitoring-tests.md).
package prometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
