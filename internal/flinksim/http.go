package flinksim

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-logr/logr"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

// NewHandler serves the Engine over HTTP:
//
//	/clusters/{namespace}/{service}[:{port}]/[v1/]<Flink REST path>   the Flink REST API behind a Service's port (8081)
//	/clusters/{namespace}/{service}/pods/{pod}@{uid}/[v1/]<path>        the same, of one JobManager pod (its port 8081)
//	/clusters/{namespace}/{service}[:{port}]/v<N>/<path>                a SQL Gateway behind a Service's port
//	/clusters/{namespace}/{service}/pods/{pod}:{port}@{uid}/v<N>/<path> a SQL Gateway in a pod, at its port
//	/admin/clusters[/{namespace}/{name}[/...]]             fault injection and inspection
//	/artifacts/<name>.jar                                  a stand-in job jar
//	/healthz
//
// Each request is answered as the Flink minor of the JobManager that
// receives it does: the paths its REST schema has, its request bodies. When
// no JobManager of the cluster listens (none Ready, or its process refused
// to start or died) the connection is reset without an answer: behind a
// Service with no ready endpoint, or on a pod where nothing listens, a
// client's connection is refused, and this one server cannot refuse
// connections for a single path prefix.
func NewHandler(e *Engine, log logr.Logger) http.Handler {
	return &handler{e: e, log: log}
}

type handler struct {
	e   *Engine
	log logr.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) == 1 && segs[0] == "healthz":
		_, _ = io.WriteString(w, "ok\n")
	case len(segs) == 2 && segs[0] == "artifacts" && strings.HasSuffix(segs[1], ".jar"):
		// A stand-in job jar for spec.job.jarURI on the local platform:
		// the simulator runs no code, so any bytes do.
		w.Header().Set("Content-Type", "application/java-archive")
		_, _ = io.WriteString(w, "PK\x03\x04 Flink REST simulator stand-in jar: "+segs[1]+"\n")
	case len(segs) >= 3 && segs[0] == "clusters":
		h.flink(w, r, ClusterKey{Namespace: segs[1], Name: segs[2]}, segs[3:])
	case len(segs) >= 2 && segs[0] == "admin" && segs[1] == "clusters":
		h.admin(w, r, segs[2:])
	default:
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	}
}

// refuse ends the connection without a response, resetting it where it
// can.
func refuse(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// podAddress splits a pod's address, {pod}@{uid}, into the pod's name
// (with :{port} for a SQL Gateway) and UID. No Flink class: this is how a
// request reaches a process (Kubernetes gives each pod sandbox its own
// IP); what the process then does with it, such as keep an uploaded jar
// in its own web.upload.dir, is Flink's and modelled where the request is
// served. The operator dials a pod at its IP, which
// Kubernetes gives one incarnation of a pod: a StatefulSet's successor of
// the same name, created once its predecessor is gone, has an address of
// its own, and a request to it never reaches the process the predecessor
// ran. The simulator learns pods a moment late (its namespace reads); the
// UID keeps it from answering for a pod with a process of the name's
// earlier incarnation that it has not yet seen go (a job submitted there
// would be lost with it, where Flink would never have received it).
//
// An address without a UID names no incarnation; no network has one, so
// the handler answers it with an error that names the template to use
// instead of guessing which process the client meant.
func podAddress(seg string) (pod, uid string, ok bool) {
	pod, uid, _ = strings.Cut(seg, "@")
	return pod, uid, pod != "" && uid != ""
}

// flink serves one cluster's REST request.
func (h *handler) flink(w http.ResponseWriter, r *http.Request, k ClusterKey, p []string) {
	pod, uid := "", ""
	if len(p) >= 2 && p[0] == "pods" {
		var ok bool
		if pod, uid, ok = podAddress(p[1]); !ok {
			writeError(w, http.StatusBadRequest, "a pod's address is {pod}@{uid} (Simulator.PodURLTemplate): a pod's IP names one incarnation of it, not "+p[1])
			return
		}
		p = p[2:]
		if name, port, ok := strings.Cut(pod, ":"); ok {
			// {pod}:{port}: a SQL Gateway in the pod, at its pod IP.
			n, _ := strconv.Atoi(port)
			g, serving := h.e.dialGatewayPod(k.Namespace, name, uid, int32(n))
			if !serving {
				refuse(w)
				return
			}
			h.gateway(w, r, g, "/"+strings.Join(p, "/"))
			return
		}
	} else if svc, port := servicePort(k); port > 0 {
		if g, serving := h.e.dialGateway(svc, port); g != nil {
			if !serving {
				refuse(w)
				return
			}
			h.gateway(w, r, g, "/"+strings.Join(p, "/"))
			return
		}
	}
	if len(p) > 0 && p[0] == "v1" {
		p = p[1:]
	}
	route := "/" + strings.Join(p, "/")
	uri := route
	if r.URL.RawQuery != "" {
		uri += "?" + r.URL.RawQuery
	}
	var (
		t       target
		version flink.Version
		err     error
	)
	if pod != "" {
		t, version, err = h.e.dialPod(k, pod, uid)
	} else {
		svc, port := servicePort(k)
		t, version, err = h.e.dial(svc, port, r.RemoteAddr)
	}
	if err != nil {
		h.log.V(1).Info("Flink REST simulator: connection refused", "cluster", k.String(), "path", route, "reason", err.Error())
		refuse(w)
		return
	}
	schema, err := flinkschema.ForMinor(version.Line().String())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	_, op, params, err := schema.Operation(r.Method, route)
	if err != nil || op == nil {
		// RouterHandler: no route for the method and path.
		h.reply(w, k, r.Method, route, nil, handlerErr(http.StatusNotFound, "Not found: %s", uri), 0)
		return
	}
	body, err := h.body(r, schema, op, version)
	if err != nil {
		h.reply(w, k, r.Method, route, nil, err, 0)
		return
	}
	out, status, err := h.call(r, t, op.OperationID, params, body, schema, version)
	h.reply(w, k, r.Method, route, out, err, status)
}

// servicePort splits {service}[:{port}]: a Service and the port dialled
// on it, RESTPort when none is given, -1 when it is not a number.
func servicePort(k ClusterKey) (ClusterKey, int32) {
	name, p, ok := strings.Cut(k.Name, ":")
	if !ok {
		return k, RESTPort
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return ClusterKey{Namespace: k.Namespace, Name: name}, -1
	}
	return ClusterKey{Namespace: k.Namespace, Name: name}, int32(n)
}

// body reads a request body as AbstractHandler does: an empty body is
// "{}"; a body that is not the operation's JSON is a 400. Before 1.20 the
// strict ObjectMapper also refuses properties the request class does not
// know; from 1.20 they are ignored (FLINK-35302).
func (h *handler) body(r *http.Request, schema *flinkschema.Schema, op *openapi3.Operation, v flink.Version) (map[string]any, error) {
	name, props := schema.RequestBody(op)
	if name == "" {
		// No JSON body (the jar upload's is a multipart form).
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 100<<20))
	if err != nil {
		return nil, handlerErr(http.StatusBadRequest, "Bad request received.")
	}
	if strings.TrimSpace(string(data)) == "" {
		data = []byte("{}")
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, handlerErr(http.StatusBadRequest, "Request did not match expected format %s.", name)
	}
	if schema.OpenMap(name) {
		// A map body (JobResourceRequirementsBody): its keys are data.
		return m, nil
	}
	// Jackson reads an enum property by its exact name (RestMapperUtils'
	// mapper does not enable ACCEPT_CASE_INSENSITIVE_ENUMS): "no_claim"
	// or a misspelt mode is a 400, not the default.
	for k, names := range schema.Enums(name) {
		if val, ok := m[k]; ok && val != nil {
			if str, _ := val.(string); !slices.Contains(names, str) {
				return nil, handlerErr(http.StatusBadRequest, "Request did not match expected format %s.\nCaused by: com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value from String %q: not one of the values accepted for Enum class: [%s]", name, fmt.Sprint(val), strings.Join(names, ", "))
			}
		}
	}
	if !v.AtLeast(1, 20) {
		for k := range m {
			if !slices.Contains(props, k) {
				return nil, handlerErr(http.StatusBadRequest, "Request did not match expected format %s.\nCaused by: com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException: Unrecognized field \"%s\" (class %s), not marked as ignorable", name, k, name)
			}
		}
	} else {
		for k := range m {
			if !slices.Contains(props, k) {
				delete(m, k)
			}
		}
	}
	return m, nil
}

// into decodes a request body map into a typed request; a value of the
// wrong JSON type is a 400 as Jackson's is.
func into(m map[string]any, name string, v any) error {
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, v); err != nil {
		return handlerErr(http.StatusBadRequest, "Request did not match expected format %s.", name)
	}
	return nil
}

// call runs the simulated handler of an operation.
func (h *handler) call(r *http.Request, t target, opID string, params map[string]string, body map[string]any, schema *flinkschema.Schema, v flink.Version) (any, int, error) {
	e := h.e
	switch opID {
	case "getClusterOverview":
		out, err := e.overview(t)
		return out, http.StatusOK, err
	case "getDashboardConfiguration":
		out, err := e.dashboardConfiguration(t)
		return out, http.StatusOK, err
	case "getJobIdsWithStatusesOverview":
		out, err := e.jobs(t)
		return out, http.StatusOK, err
	case "getJobsOverview":
		out, err := e.jobsOverview(t)
		return out, http.StatusOK, err
	case "getTaskManagers":
		out, err := e.taskManagers(t)
		return out, http.StatusOK, err
	case "getJobDetails":
		out, err := e.job(t, params["jobid"])
		return out, http.StatusOK, err
	case "cancelJob":
		return struct{}{}, http.StatusAccepted, e.cancelJob(t, params["jobid"], r.URL.Query().Get("mode"))
	case "getJobExceptions":
		max := 20
		if v := r.URL.Query().Get("maxExceptions"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, 0, handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (maxExceptions) from value \"%s\".", v)
			}
			max = n
		}
		out, err := e.jobExceptions(t, params["jobid"], max)
		return out, http.StatusOK, err
	case "getCheckpointingStatistics":
		out, err := e.checkpoints(t, params["jobid"])
		return out, http.StatusOK, err
	case "triggerCheckpoint":
		var req flink.CheckpointTriggerRequest
		if err := into(body, "CheckpointTriggerRequestBody", &req); err != nil {
			return nil, 0, err
		}
		out, err := e.triggerCheckpoint(t, params["jobid"], req)
		return out, http.StatusAccepted, err
	case "getCheckpointStatus":
		out, err := e.checkpointStatus(t, params["jobid"], params["triggerid"])
		return out, http.StatusOK, err
	case "triggerSavepoint":
		var req flink.SavepointTriggerRequest
		if err := into(body, "SavepointTriggerRequestBody", &req); err != nil {
			return nil, 0, err
		}
		out, err := e.triggerSavepoint(t, params["jobid"], req)
		return out, http.StatusAccepted, err
	case "triggerStopWithSavepoint":
		var req flink.StopWithSavepointRequest
		if err := into(body, "StopWithSavepointRequestBody", &req); err != nil {
			return nil, 0, err
		}
		out, err := e.stopWithSavepoint(t, params["jobid"], req)
		return out, http.StatusAccepted, err
	case "getSavepointStatus":
		out, err := e.savepointStatus(t, params["jobid"], params["triggerid"])
		return out, http.StatusOK, err
	case "uploadJar":
		out, err := h.upload(r, t)
		return out, http.StatusOK, err
	case "deleteJar":
		return struct{}{}, http.StatusOK, e.deleteJar(t, params["jarid"])
	case "getJobMetrics":
		out, err := e.jobMetricsREST(t, params["jobid"], r.URL.Query().Get("get"))
		return out, http.StatusOK, err
	case "getJobVertexMetrics":
		out, err := e.vertexMetricsREST(t, params["jobid"], params["vertexid"], r.URL.Query().Get("get"))
		return out, http.StatusOK, err
	case "getAggregatedSubtaskMetrics":
		q := map[string]string{}
		for _, k := range []string{"get", "agg", "subtasks"} {
			q[k] = r.URL.Query().Get(k)
		}
		out, err := e.aggregatedSubtaskMetrics(t, params["jobid"], params["vertexid"], q)
		return out, http.StatusOK, err
	case "getJobResourceRequirements":
		out, err := e.jobResourceRequirements(t, params["jobid"])
		return out, http.StatusOK, err
	case "updateJobResourceRequirements":
		var req resourceRequirements
		if err := into(body, "JobResourceRequirementsBody", &req); err != nil {
			return nil, 0, err
		}
		return struct{}{}, http.StatusOK, e.updateJobResourceRequirements(t, params["jobid"], req)
	case "submitJobFromJar":
		var req flink.JarRunRequest
		if err := into(body, "JarRunRequestBody", &req); err != nil {
			return nil, 0, err
		}
		claim, _ := body["claimMode"].(string)
		_, inBody := body["allowNonRestoredState"]
		inQuery, err := runQuery(r, &req, schema)
		if err != nil {
			return nil, 0, err
		}
		var allow *bool
		if inBody || inQuery {
			allow = &req.AllowNonRestoredState
		}
		out, err := e.runJar(t, params["jarid"], req, claim, allow)
		return out, http.StatusOK, err
	}
	return nil, 0, handlerErr(http.StatusNotImplemented, "%s: Flink %s serves this operation; the Flink REST simulator does not", opID, v)
}

// reply writes a response or Flink's error body.
func (h *handler) reply(w http.ResponseWriter, k ClusterKey, method, route string, out any, err error, status int) {
	if err != nil {
		code := statusOf(err)
		if code == 0 {
			refuse(w)
			return
		}
		msg := err.Error()
		if ae, ok := err.(*apiError); ok {
			msg = ae.msg
		}
		h.log.V(1).Info("Flink REST simulator request failed", "cluster", k.String(), "method", method, "path", route, "status", code, "error", msg)
		writeError(w, code, msg)
		return
	}
	h.log.V(2).Info("Flink REST simulator request", "cluster", k.String(), "method", method, "path", route, "status", status)
	writeJSON(w, status, out)
}

func (h *handler) upload(r *http.Request, t target) (*flink.JarUploadResponse, error) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return nil, handlerErr(http.StatusBadRequest, "Exactly 1 file must be sent, received 0.")
	}
	n := 0
	var name string
	for _, fhs := range r.MultipartForm.File {
		for _, fh := range fhs {
			n++
			name = fh.Filename
		}
	}
	if n != 1 {
		return nil, handlerErr(http.StatusBadRequest, "Exactly 1 file must be sent, received %d.", n)
	}
	return h.e.uploadJar(t, name)
}

// runQuery applies the query parameters of /jars/{jarid}/run that the
// minor declares, where the body leaves them unset
// (JarHandlerUtils#fromRequestBodyOrQueryParameter); allowSet says the
// query gave allowNonRestoredState.
func runQuery(r *http.Request, req *flink.JarRunRequest, schema *flinkschema.Schema) (allowSet bool, err error) {
	_, op, _, _ := schema.Operation(http.MethodPost, "/jars/x/run")
	declared := map[string]bool{}
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "query" {
			declared[p.Value.Name] = true
		}
	}
	q := r.URL.Query()
	get := func(name string) string {
		if !declared[name] {
			return ""
		}
		return q.Get(name)
	}
	bad := func(name, v string) error {
		return handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (%s) from value \"%s\".", name, v)
	}
	if v := get("savepointPath"); v != "" && req.SavepointPath == "" {
		req.SavepointPath = v
	}
	if v := get("entry-class"); v != "" && req.EntryClass == "" {
		req.EntryClass = v
	}
	if v := get("allowNonRestoredState"); v != "" && !req.AllowNonRestoredState {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, bad("allowNonRestoredState", v)
		}
		req.AllowNonRestoredState, allowSet = b, true
	}
	if v := get("parallelism"); v != "" && req.Parallelism == 0 {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return false, bad("parallelism", v)
		}
		req.Parallelism = int32(n)
	}
	if v := get("programArg"); v != "" && len(req.ProgramArgsList) == 0 {
		req.ProgramArgsList = strings.Split(v, ",")
	}
	if v := get("program-args"); v != "" && req.ProgramArgs == "" {
		req.ProgramArgs = v
	}
	return allowSet, nil
}

// admin serves /admin/clusters/...
func (h *handler) admin(w http.ResponseWriter, r *http.Request, p []string) {
	m := r.Method
	if len(p) == 0 {
		if m != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "Use GET")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"clusters": h.e.Clusters()})
		return
	}
	if len(p) < 2 {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	k := ClusterKey{Namespace: p[0], Name: p[1]}
	route := strings.Join(p[2:], "/")
	var (
		err error
		out any
	)
	switch {
	case route == "" && m == http.MethodGet:
		var v ClusterView
		if v, err = h.e.View(k); err == nil {
			out = v
		}
	case route == "unavailable" && m == http.MethodPost:
		// {"requests": N}: the next N requests answer 503; absent or
		// negative means until the faults are cleared.
		req := struct {
			Requests *int `json:"requests"`
		}{}
		if err = decode(r, &req); err == nil {
			n := -1
			if req.Requests != nil {
				n = *req.Requests
			}
			h.e.InjectUnavailable(k, n)
			h.log.Info("Flink REST simulator: injected 503s", "cluster", k.String(), "requests", n)
		}
	case route == "answers/lose" && m == http.MethodPost:
		// {"endpoint": "POST /jars/{jarid}/run", "requests": N}: the next
		// N requests to endpoint take effect and lose their answers.
		req := struct {
			Endpoint string `json:"endpoint"`
			Requests int    `json:"requests"`
		}{}
		if err = decode(r, &req); err == nil && (req.Endpoint == "" || req.Requests < 1) {
			err = errorf(http.StatusBadRequest, "an endpoint and a number of requests above 0 are required")
		}
		if err == nil {
			h.e.LoseAnswers(k, req.Endpoint, req.Requests)
			h.log.Info("Flink REST simulator: answers to lose", "cluster", k.String(), "endpoint", req.Endpoint, "requests", req.Requests)
		}
	case route == "faults" && m == http.MethodPost:
		// {"savepoint": "fail"|"stall"|"", "checkpoint": ..., "stop":
		// "tasksDoNotFinish"|"", "cancelDelay": "30s", "savepointDelay":
		// "5m", "restoreDelay": "20s", "cleanupDelay": "10m"}; an absent
		// key leaves that fault as it is.
		req := struct {
			Savepoint      *Fault     `json:"savepoint"`
			Checkpoint     *Fault     `json:"checkpoint"`
			Stop           *StopFault `json:"stop"`
			CancelDelay    *string    `json:"cancelDelay"`
			SavepointDelay *string    `json:"savepointDelay"`
			RestoreDelay   *string    `json:"restoreDelay"`
			CleanupDelay   *string    `json:"cleanupDelay"`
			TaskStart      *string    `json:"taskStart"`
		}{}
		var delay, spDelay, restore, cleanup time.Duration
		if err = decode(r, &req); err == nil {
			for _, f := range []*Fault{req.Savepoint, req.Checkpoint} {
				if f != nil && *f != FaultNone && *f != FaultFail && *f != FaultStall {
					err = errorf(http.StatusBadRequest, "Fault %q is not fail, stall or empty", *f)
				}
			}
			if req.Stop != nil && *req.Stop != StopFinishes && *req.Stop != StopTasksDoNotFinish {
				err = errorf(http.StatusBadRequest, "Stop fault %q is not tasksDoNotFinish or empty", *req.Stop)
			}
			for _, d := range []struct {
				name string
				in   *string
				out  *time.Duration
			}{{"cancelDelay", req.CancelDelay, &delay}, {"savepointDelay", req.SavepointDelay, &spDelay}, {"restoreDelay", req.RestoreDelay, &restore}, {"cleanupDelay", req.CleanupDelay, &cleanup}} {
				if d.in == nil || err != nil {
					continue
				}
				if *d.out, err = time.ParseDuration(*d.in); err != nil {
					err = errorf(http.StatusBadRequest, "%s %q: %v", d.name, *d.in, err)
				}
			}
		}
		if err == nil {
			if req.Savepoint != nil {
				h.e.SetSavepointFault(k, *req.Savepoint)
			}
			if req.Checkpoint != nil {
				h.e.SetCheckpointFault(k, *req.Checkpoint)
			}
			if req.Stop != nil {
				h.e.SetStopFault(k, *req.Stop)
			}
			if req.CancelDelay != nil {
				h.e.SetCancelDelay(k, delay)
			}
			if req.SavepointDelay != nil {
				h.e.SetSavepointDelay(k, spDelay)
			}
			if req.RestoreDelay != nil {
				h.e.SetRestoreDelay(k, restore)
			}
			if req.CleanupDelay != nil {
				h.e.SetCleanupDelay(k, cleanup)
			}
			if req.TaskStart != nil {
				h.e.SetTaskStartFault(k, *req.TaskStart)
			}
			h.log.Info("Flink REST simulator: injected faults", "cluster", k.String(), "savepoint", req.Savepoint, "checkpoint", req.Checkpoint, "stop", req.Stop, "cancelDelay", req.CancelDelay, "savepointDelay", req.SavepointDelay, "restoreDelay", req.RestoreDelay, "cleanupDelay", req.CleanupDelay, "taskStart", req.TaskStart)
		}
	case route == "faults" && m == http.MethodDelete:
		h.e.ClearFaults(k)
		h.log.Info("Flink REST simulator: cleared faults", "cluster", k.String())
	case route == "jobmanager/lose" && m == http.MethodPost:
		err = h.e.LoseJobManager(k)
	case route == "jobmanager/stop" && m == http.MethodPost:
		err = h.e.StopJobManager(k)
	case route == "workload" && m == http.MethodPost:
		// A Workload: the job graph, the source's rate and its backlog.
		var w Workload
		if err = decode(r, &w); err == nil {
			err = h.e.SetWorkload(k, w)
			h.log.Info("Flink REST simulator: workload set", "cluster", k.String(), "rate", w.Rate.Kind)
		}
	case route == "operations/expire" && m == http.MethodPost:
		out = map[string]int{"expired": h.e.ExpireOperations(k)}
	case route == "jobstore/expire" && m == http.MethodPost:
		out = map[string]int{"expired": h.e.ExpireJobs(k)}
	case route == "paths/lose" && m == http.MethodPost:
		req := struct {
			Path string `json:"path"`
		}{}
		if err = decode(r, &req); err == nil {
			var n int
			if n, err = h.e.LosePath(k, req.Path); err == nil {
				out = map[string]int{"removed": n}
			}
		}
	case len(p) == 5 && p[2] == "jobs" && p[4] == "state" && m == http.MethodPost:
		// {"state": "FAILING"|"FAILED"|"RESTARTING"}
		req := struct {
			State flink.JobStatus `json:"state"`
		}{}
		if err = decode(r, &req); err == nil {
			err = h.e.SetJobState(k, p[3], req.State)
		}
	case len(p) == 5 && p[2] == "jobs" && p[4] == "fail" && m == http.MethodPost:
		// {"cause": "..."}: a task failure; the restart strategy decides.
		req := struct {
			Cause string `json:"cause"`
		}{}
		if err = decode(r, &req); err == nil {
			err = h.e.FailJob(k, p[3], req.Cause)
		}
	default:
		err = errorf(http.StatusNotFound, "Not found: %s %s", m, r.URL.Path)
	}
	switch {
	case err != nil:
		code := statusOf(err)
		writeError(w, code, strings.TrimPrefix(err.Error(), fmt.Sprintf("HTTP %d: ", code)))
	case out != nil:
		writeJSON(w, http.StatusOK, out)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// decode reads an optional JSON body of the admin API strictly, so a
// misspelt field fails loudly.
func decode(r *http.Request, into any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return errorf(http.StatusBadRequest, "Reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return errorf(http.StatusBadRequest, "Request did not match expected format %T: %v", into, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers Flink's ErrorResponseBody; a NUL separates the
// messages of one that has several (internalErr).
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, flink.ErrorResponse{Errors: strings.Split(msg, "\x00")})
}
