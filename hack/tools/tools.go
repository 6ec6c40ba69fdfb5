//go:build tools

// Package tools pins the binaries Datapilot's tests and local platform run.
// They are built from the Go module proxy into ../../bin by build.sh; nothing
// here is linked into Datapilot itself.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
