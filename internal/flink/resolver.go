package flink

import (
	"fmt"
	"strings"
)

// restPort is rest.port, the same as resources.PortREST (not imported: resources builds on this package).
const restPort = 8081

// Resolver decides where a FlinkCluster's REST API is. It is the only place
// the operator makes that decision.
type Resolver struct {
	// Override, when set, is a URL template with {namespace}, {name} (the
	// FlinkCluster) and {service} (its JobManager Service, which the
	// default address names) placeholders, such as
	// http://127.0.0.1:8089/clusters/{namespace}/{service} for the Flink
	// REST simulator of the local platform.
	Override string
	// PodOverride, when set, is the template of one JobManager pod's REST
	// API, with {namespace}, {name}, {service}, {pod} and {uid} (the pod's
	// UID: the pod's own address, its IP, reaches only that incarnation of
	// a name a StatefulSet gives its successor too).
	PodOverride string
}

// jobManagerService is the name of the FlinkCluster's JobManager Service,
// the same as resources.JobManagerName (not imported, as restPort).
func jobManagerService(name string) string { return name + "-jobmanager" }

func placeholders(namespace, name string, more ...string) *strings.Replacer {
	return strings.NewReplacer(append([]string{"{namespace}", namespace, "{name}", name, "{service}", jobManagerService(name)}, more...)...)
}

// JobManagerURL is the REST base URL of one JobManager pod. An uploaded jar
// lives in the JobManager process that received it (web.upload.dir), so
// the upload and the run must reach the same pod, which the Service does
// not promise when several JobManagers stand behind it.
func (r Resolver) JobManagerURL(namespace, name, pod, uid, podIP string) string {
	if r.PodOverride != "" {
		return placeholders(namespace, name, "{pod}", pod, "{uid}", uid).Replace(r.PodOverride)
	}
	if r.Override != "" {
		return r.BaseURL(namespace, name)
	}
	return fmt.Sprintf("http://%s:%d", podIP, restPort)
}

// SQLGatewayURL is the REST base URL of the SQL Gateway in one JobManager
// pod, at its pod IP and port: no Service publishes it.
func (r Resolver) SQLGatewayURL(namespace, name, pod, uid, podIP string, port int32) string {
	if r.PodOverride != "" {
		return placeholders(namespace, name, "{pod}", fmt.Sprintf("%s:%d", pod, port), "{uid}", uid).Replace(r.PodOverride)
	}
	return fmt.Sprintf("http://%s:%d", podIP, port)
}

// BaseURL is the REST base URL of the FlinkCluster namespace/name: by
// default its JobManager Service, <name>-jobmanager.<namespace>.svc:8081.
func (r Resolver) BaseURL(namespace, name string) string {
	if r.Override != "" {
		return placeholders(namespace, name).Replace(r.Override)
	}
	return fmt.Sprintf("http://%s.%s.svc:%d", jobManagerService(name), namespace, restPort)
}
