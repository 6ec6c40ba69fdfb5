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
}

// BaseURL is the REST base URL of the FlinkCluster namespace/name: by
// default its JobManager Service, <name>-jobmanager.<namespace>.svc:8081.
func (r Resolver) BaseURL(namespace, name string) string {
	if r.Override != "" {
		return strings.NewReplacer("{namespace}", namespace, "{name}", name).Replace(r.Override)
	}
	return fmt.Sprintf("http://%s-jobmanager.%s.svc:%d", name, namespace, restPort)
}
