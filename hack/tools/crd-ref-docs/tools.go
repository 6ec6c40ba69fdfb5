//go:build tools

// Package tools pins crd-ref-docs, which writes docs/api.md from the API
// types and their kubebuilder markers. It has a module of its own so that
// its dependencies do not move the pins of the control-plane tools.
package tools

import _ "github.com/elastic/crd-ref-docs"
