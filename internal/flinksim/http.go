package flinksim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-logr/logr"

	"github.com/datapilot/datapilot/internal/flink"
)

// NewHandler serves the Engine over HTTP:
//
//	/clusters/{namespace}/{name}/[v1/]<Flink REST path>   the Flink REST API of one cluster
//	/admin/clusters[/{namespace}/{name}[/...]]             fault injection and inspection
//	/healthz
//
// A cluster whose JobManager is not Ready answers 503 (a single server
// cannot refuse connections for one path prefix only); the client sees both
// as "unavailable".
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
		k := ClusterKey{Namespace: segs[1], Name: segs[2]}
		rest := segs[3:]
		if len(rest) > 0 && rest[0] == "v1" {
			rest = rest[1:]
		}
		h.flink(w, r, k, rest)
	case len(segs) >= 2 && segs[0] == "admin" && segs[1] == "clusters":
		h.admin(w, r, segs[2:])
	default:
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	}
}

// flink routes one cluster's REST request.
func (h *handler) flink(w http.ResponseWriter, r *http.Request, k ClusterKey, p []string) {
	var (
		out    any
		err    error
		status = http.StatusOK
	)
	m := r.Method
	route := strings.Join(p, "/")
	switch {
	case route == "overview" && m == http.MethodGet:
		out, err = h.e.Overview(k)
	case route == "config" && m == http.MethodGet:
		out, err = h.e.DashboardConfiguration(k)
	case route == "jobs" && m == http.MethodGet:
		out, err = h.e.Jobs(k)
	case route == "jobs/overview" && m == http.MethodGet:
		out, err = h.e.JobsOverview(k)
	case route == "taskmanagers" && m == http.MethodGet:
		out, err = h.e.TaskManagers(k)
	case route == "jars/upload" && m == http.MethodPost:
		out, err = h.upload(r, k)
	case len(p) == 3 && p[0] == "jars" && p[2] == "run" && m == http.MethodPost:
		var req flink.JarRunRequest
		if err = decode(r, &req); err == nil {
			if err = runQuery(r, &req); err == nil {
				out, err = h.e.RunJar(k, p[1], req)
			}
		}
	case len(p) == 2 && p[0] == "jobs" && m == http.MethodGet:
		out, err = h.e.Job(k, p[1])
	case len(p) == 2 && p[0] == "jobs" && m == http.MethodPatch:
		status = http.StatusAccepted
		err = h.e.CancelJob(k, p[1], r.URL.Query().Get("mode"))
		out = struct{}{}
	case len(p) == 3 && p[0] == "jobs" && p[2] == "checkpoints" && m == http.MethodGet:
		out, err = h.e.Checkpoints(k, p[1])
	case len(p) == 3 && p[0] == "jobs" && p[2] == "checkpoints" && m == http.MethodPost:
		status = http.StatusAccepted
		var req flink.CheckpointTriggerRequest
		if err = decode(r, &req); err == nil {
			out, err = h.e.TriggerCheckpoint(k, p[1], req)
		}
	case len(p) == 4 && p[0] == "jobs" && p[2] == "checkpoints" && m == http.MethodGet:
		out, err = h.e.CheckpointStatus(k, p[1], p[3])
	case len(p) == 3 && p[0] == "jobs" && p[2] == "savepoints" && m == http.MethodPost:
		status = http.StatusAccepted
		var req flink.SavepointTriggerRequest
		if err = decode(r, &req); err == nil {
			out, err = h.e.TriggerSavepoint(k, p[1], req)
		}
	case len(p) == 4 && p[0] == "jobs" && p[2] == "savepoints" && m == http.MethodGet:
		out, err = h.e.SavepointStatus(k, p[1], p[3])
	case len(p) == 3 && p[0] == "jobs" && p[2] == "stop" && m == http.MethodPost:
		status = http.StatusAccepted
		var req flink.StopWithSavepointRequest
		if err = decode(r, &req); err == nil {
			out, err = h.e.StopWithSavepoint(k, p[1], req)
		}
	default:
		err = errorf(http.StatusNotFound, "Not found: /%s (the Flink REST simulator serves a subset of the API)", route)
	}
	if err != nil {
		code := statusOf(err)
		h.log.V(1).Info("Flink REST simulator request failed", "cluster", k.String(), "method", m, "path", "/"+route, "status", code, "error", err.Error())
		writeError(w, code, strings.TrimPrefix(err.Error(), fmt.Sprintf("HTTP %d: ", code)))
		return
	}
	h.log.V(2).Info("Flink REST simulator request", "cluster", k.String(), "method", m, "path", "/"+route, "status", status)
	writeJSON(w, status, out)
}

func (h *handler) upload(r *http.Request, k ClusterKey) (*flink.JarUploadResponse, error) {
	f, fh, err := r.FormFile("jarfile")
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Expected a multipart form with a file part named jarfile: %v", err)
	}
	defer f.Close()
	if !strings.HasSuffix(fh.Filename, ".jar") {
		return nil, errorf(http.StatusBadRequest, "Only Jar files are allowed.")
	}
	return h.e.UploadJar(k, fh.Filename)
}

// runQuery applies the query parameters of /jars/{jarid}/run that the body
// leaves unset.
func runQuery(r *http.Request, req *flink.JarRunRequest) error {
	q := r.URL.Query()
	if v := q.Get("savepointPath"); v != "" && req.SavepointPath == "" {
		req.SavepointPath = v
	}
	if v := q.Get("entry-class"); v != "" && req.EntryClass == "" {
		req.EntryClass = v
	}
	if v := q.Get("allowNonRestoredState"); v != "" && !req.AllowNonRestoredState {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errorf(http.StatusBadRequest, "allowNonRestoredState %q is not a boolean", v)
		}
		req.AllowNonRestoredState = b
	}
	if v := q.Get("parallelism"); v != "" && req.Parallelism == 0 {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return errorf(http.StatusBadRequest, "parallelism %q is not an integer", v)
		}
		req.Parallelism = int32(n)
	}
	if v := q.Get("programArg"); v != "" && len(req.ProgramArgsList) == 0 {
		req.ProgramArgsList = strings.Split(v, ",")
	}
	return nil
}

// decode reads an optional JSON body strictly: Flink refuses unknown
// fields, and so does the simulator, so a misspelt field fails loudly.
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
	var err error
	switch {
	case route == "" && m == http.MethodGet:
		var v ClusterView
		if v, err = h.e.View(k); err == nil {
			writeJSON(w, http.StatusOK, v)
			return
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
	case route == "faults" && m == http.MethodPost:
		// {"savepoint": "fail"|"stall"|"", "checkpoint": ...}; an absent key
		// leaves that fault as it is.
		req := struct {
			Savepoint  *Fault `json:"savepoint"`
			Checkpoint *Fault `json:"checkpoint"`
		}{}
		if err = decode(r, &req); err == nil {
			for _, f := range []*Fault{req.Savepoint, req.Checkpoint} {
				if f != nil && *f != FaultNone && *f != FaultFail && *f != FaultStall {
					err = errorf(http.StatusBadRequest, "Fault %q is not fail, stall or empty", *f)
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
			h.log.Info("Flink REST simulator: injected faults", "cluster", k.String(), "savepoint", req.Savepoint, "checkpoint", req.Checkpoint)
		}
	case route == "faults" && m == http.MethodDelete:
		h.e.ClearFaults(k)
		h.log.Info("Flink REST simulator: cleared faults", "cluster", k.String())
	case len(p) == 5 && p[2] == "jobs" && p[4] == "state" && m == http.MethodPost:
		// {"state": "FAILING"|"FAILED"|"RESTARTING"}
		req := struct {
			State flink.JobStatus `json:"state"`
		}{}
		if err = decode(r, &req); err == nil {
			err = h.e.SetJobState(k, p[3], req.State)
		}
	default:
		err = errorf(http.StatusNotFound, "Not found: %s %s", m, r.URL.Path)
	}
	if err != nil {
		code := statusOf(err)
		writeError(w, code, strings.TrimPrefix(err.Error(), fmt.Sprintf("HTTP %d: ", code)))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, flink.ErrorResponse{Errors: []string{msg}})
}
