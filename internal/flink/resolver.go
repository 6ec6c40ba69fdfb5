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
	// Override, when set, is a URL template with {namespace} and {name}
	// placeholders, such as http://127.0.0.1:8089/clusters/{namespace}/{name}
	// for the Flink REST simulator of the local platform.
	Override string
	// PodOverride, when set, is the template of one JobManager pod's REST
	// API, with {namespace}, {name} and {pod}.
	PodOverride string
}

// JobManagerURL is the REST base URL of one JobManager pod. An uploaded jar
// lives in the JobManager process that received it (web.upload.dir), so
// the upload and the run must reach the same pod, which the Service does
// not promise when several JobManagers stand behind it.
func (r Resolver) JobManagerURL(namespace, name, pod, podIP string) string {
	if r.PodOverride != "" {
		return strings.NewReplacer("{namespace}", namespace, "{name}", name, "{pod}", pod).Replace(r.PodOverride)
	}
	if r.Override != "" {
		return r.BaseURL(namespace, name)
	}
	return fmt.Sprintf("http://%s:%d", podIP, restPort)
}

// BaseURL is the REST base URL of the FlinkCluster namespace/name: by
// default its JobManager Service, <name>-jobmanager.<namespace>.svc:8081.
func (r Resolver) BaseURL(namespace, name string) string {
	if r.Override != "" {
		return strings.NewReplacer("{namespace}", namespace, "{name}", name).Replace(r.Override)
	}
	return fmt.Sprintf("http://%s-jobmanager.%s.svc:%d", name, namespace, restPort)
}
