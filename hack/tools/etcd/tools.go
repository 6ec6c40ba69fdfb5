//go:build tools

// Package etcd pins etcd v3.6 on its own: Kubernetes v1.37 would pull the
// shared tools module up to etcd v3.7, and the platform is meant to run the
// v3.6 line that Kubernetes v1.37 is released against.
package etcd

import _ "go.etcd.io/etcd/server/v3"
