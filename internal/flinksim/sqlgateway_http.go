package flinksim

import (
	"net/http"
	"strings"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

// gateway serves one request to a SQL Gateway as SqlGatewayRestEndpoint
// does: the paths of the API version the URL names (/v1, /v2, ... up to
// the minor's newest), its request bodies, its errors. A path without a
// version would reach the default version in Flink; the simulator
// answers 404 there, so a client must name the version it speaks.
func (h *handler) gateway(w http.ResponseWriter, r *http.Request, g *sqlGateway, route string) {
	version, rest := flinkschema.GatewayVersionOf(route)
	key := ClusterKey{Namespace: g.namespace, Name: g.pod.Name}
	minor := g.version.Line().String()
	if version < 1 || version > flinkschema.GatewayVersions(minor) {
		h.gatewayReply(w, key, r.Method, route, nil, handlerErr(http.StatusNotFound, "Not found: %s", route))
		return
	}
	schema, err := flinkschema.ForGateway(minor, version)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	_, op, params, err := schema.Operation(r.Method, rest)
	if err != nil || op == nil {
		h.gatewayReply(w, key, r.Method, route, nil, handlerErr(http.StatusNotFound, "Not found: %s", route))
		return
	}
	body, err := h.body(r, schema, op, g.version)
	if err != nil {
		h.gatewayReply(w, key, r.Method, route, nil, err)
		return
	}
	query := map[string]string{}
	for k := range r.URL.Query() {
		query[k] = r.URL.Query().Get(k)
	}
	out, err := h.e.gatewayCall(g, version, op.OperationID, params, body, query)
	h.gatewayReply(w, key, r.Method, route, out, err)
}

// gatewayReply writes a gateway's answer: 200 and the body, or the error
// as ErrorResponseBody (an unhandled exception's two entries,
// "Internal server error." and the trace).
func (h *handler) gatewayReply(w http.ResponseWriter, k ClusterKey, method, route string, out any, err error) {
	if err == nil {
		h.log.V(2).Info("Flink REST simulator SQL Gateway request", "gateway", k.String(), "method", method, "path", route)
		writeJSON(w, http.StatusOK, out)
		return
	}
	code := statusOf(err)
	msg := err.Error()
	if ae, ok := err.(*apiError); ok {
		msg = ae.msg
	}
	h.log.V(1).Info("Flink REST simulator SQL Gateway request failed", "gateway", k.String(), "method", method, "path", route, "status", code)
	writeJSON(w, code, flink.ErrorResponse{Errors: strings.Split(msg, "\x00")})
}
