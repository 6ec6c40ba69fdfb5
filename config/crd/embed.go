// Package crd embeds the generated CustomResourceDefinitions so the local
// platform and the tests install exactly what `make manifests` produced.
package crd

import "embed"

// Bases holds bases/*.yaml.
//
//go:embed bases/*.yaml
var Bases embed.FS
