package flinksim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

// DefaultStatementDelay is how long a gateway operation runs before it is
// FINISHED (or ERROR), when EngineOptions leaves StatementDelay zero.
const DefaultStatementDelay = 200 * time.Millisecond

// GatewayPod is a container that runs Flink's SQL Gateway
// (bin/sql-gateway.sh start-foreground), as its pod shows it.
type GatewayPod struct {
	Pod
	// Container is the container's name: a pod may run a gateway beside
	// a JobManager.
	Container string
	// Services are the Services whose selector matches the pod; a client
	// reaches the gateway through them.
	Services []Service
}

// GatewayArgs reads a container's command and arguments as the official
// image runs them: bin/sql-gateway.sh start-foreground [-Dk=v ...] starts
// the SQL Gateway in the foreground (SqlGateway#main through
// flink-console.sh). `start` daemonizes it and the script returns, so the
// container ends at once; anything else runs no gateway. ok is false for a
// container that runs no gateway; args are the options after
// start-foreground.
func GatewayArgs(command, args []string) ([]string, bool) {
	argv := append(append([]string{}, command...), args...)
	if len(argv) < 2 || argv[0][strings.LastIndex(argv[0], "/")+1:] != "sql-gateway.sh" || argv[1] != "start-foreground" {
		return nil, false
	}
	return argv[2:], true
}

// sqlGateway is one SQL Gateway process: SqlGateway with its
// SqlGatewayServiceImpl (sessions, each with its OperationManager) behind
// a SqlGatewayRestEndpoint.
type sqlGateway struct {
	key       string
	namespace string
	pod       GatewayPod
	version   flink.Version
	conf      *conf
	// down says why it does not serve (its configuration did not load, or
	// its endpoint refused it); empty while it serves.
	down    string
	started time.Time
	port    int32
	// idle and check are SqlGatewayServiceConfigOptions'
	// sql-gateway.session.idle-timeout and .check-interval.
	idle, check time.Duration
	sessions    map[string]*sqlSession
}

// sqlSession is a SessionImpl: its configuration (the gateway's, the
// properties it was opened with, every SET since), its catalog and its
// operations.
type sqlSession struct {
	handle     string
	props      map[string]string
	lastAccess time.Time
	cat        *sqlCatalog
	ops        map[string]*sqlOperation
}

// sqlOperation is an Operation of the OperationManager: it runs
// asynchronously; until ready it is RUNNING, then FINISHED with its result
// or ERROR with its failure.
type sqlOperation struct {
	handle   string
	ready    time.Time
	canceled bool
	err      error
	columns  []sqlColumn
	rows     [][]string
	jobID    string
	// ok says the result is TABLE_RESULT_OK (ResultKind SUCCESS), not
	// content (SUCCESS_WITH_CONTENT).
	ok bool
}

type sqlColumn struct{ name, typ string }

// gatewayDefaultPort is SqlGatewayRestOptions.PORT's default.
const gatewayDefaultPort = 8083

// startGateway reads the gateway's configuration as SqlGateway#main does
// (GlobalConfiguration from $FLINK_CONF_DIR, the -D options over it,
// SqlGatewayOptionsParser) and starts its REST endpoint
// (SqlGatewayRestEndpointFactory requires sql-gateway.endpoint.rest.address;
// it binds .bind-port, else .port, default 8083).
func startGateway(key, namespace string, gp GatewayPod, now time.Time) *sqlGateway {
	g := &sqlGateway{key: key, namespace: namespace, pod: gp, started: now, port: gatewayDefaultPort, sessions: map[string]*sqlSession{}}
	v, err := flink.ParseVersion(ImageVersion(gp.Image))
	if err != nil {
		g.down = fmt.Sprintf("the image %s names no Flink version", gp.Image)
		return g
	}
	g.version = v
	if flinkschema.GatewayVersions(v.Line().String()) == 0 {
		g.down = fmt.Sprintf("Flink %s's SQL Gateway is not simulated", v)
		return g
	}
	// The entrypoint does not run: the command is the gateway's script.
	p := gp.Pod
	p.ConfWritable = false
	cf, err := podConf(v, p, RoleNone)
	if err != nil {
		g.down = err.Error()
		return g
	}
	g.conf = cf
	if t, _ := cf.raw("sql-gateway.endpoint.type"); t != "" && !strings.EqualFold(t, "rest") {
		g.down = "no REST endpoint: sql-gateway.endpoint.type is " + t
		return g
	}
	if a, ok := cf.raw("sql-gateway.endpoint.rest.address"); !ok || strings.TrimSpace(a) == "" {
		g.down = "org.apache.flink.table.api.ValidationException: One or more required options are missing.\n\nMissing required options are:\n\naddress"
		return g
	}
	for _, k := range []string{"sql-gateway.endpoint.rest.bind-port", "sql-gateway.endpoint.rest.port"} {
		if s, ok := cf.raw(k); ok && strings.TrimSpace(s) != "" {
			first, _, _ := strings.Cut(strings.Split(s, ",")[0], "-")
			n, err := strconv.Atoi(strings.TrimSpace(first))
			if err != nil {
				g.down = parseErr(k, s, err).Error()
				return g
			}
			g.port = int32(n)
			break
		}
	}
	for _, d := range []struct {
		key string
		out *time.Duration
		def time.Duration
	}{{"sql-gateway.session.idle-timeout", &g.idle, 10 * time.Minute}, {"sql-gateway.session.check-interval", &g.check, time.Minute}} {
		*d.out = d.def
		if s, ok := cf.raw(d.key); ok {
			if *d.out, err = parseDuration(s, v.AtLeast(2, 1)); err != nil {
				g.down = parseErr(d.key, s, err).Error()
				return g
			}
		}
	}
	return g
}

// ObserveGateways records the SQL Gateway containers of a namespace: one
// process per running container, started when it appears, gone (with
// every session, which lives only in its memory) when it stops. net is the
// network its clients dial through.
func (e *Engine) ObserveGateways(namespace string, pods []GatewayPod, net Network) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	seen := map[string]bool{}
	for _, gp := range pods {
		key := namespace + "/" + gp.UID + "/" + gp.Container
		if !gp.Running {
			continue
		}
		seen[key] = true
		if g, ok := e.gateways[key]; ok {
			g.pod.Services, g.pod.Ready = gp.Services, gp.Ready
			continue
		}
		e.gateways[key] = startGateway(key, namespace, gp, now)
	}
	for key, g := range e.gateways {
		if g.namespace == namespace && !seen[key] {
			delete(e.gateways, key)
		}
	}
	e.gatewayNets[namespace] = net
}

// dialGateway is the gateway a connection to a Service's port reaches: a
// serving gateway whose pod is one of the port's endpoints at the port it
// binds.
func (e *Engine) dialGateway(k ClusterKey, port int32) (*sqlGateway, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]string, 0, len(e.gateways))
	for key := range e.gateways {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		g := e.gateways[key]
		if g.namespace != k.Namespace {
			continue
		}
		for _, s := range g.pod.Services {
			if s.Name != k.Name {
				continue
			}
			for _, ep := range s.Ports[port] {
				if ep.Pod == g.pod.UID && ep.Port == g.port {
					return g, g.down == ""
				}
			}
		}
	}
	return nil, false
}

// dialGatewayPod is the gateway a connection to a pod's IP and port
// reaches, whether or not the pod is Ready: the pod incarnation uid (see
// podAddress).
func (e *Engine) dialGatewayPod(namespace, pod, uid string, port int32) (*sqlGateway, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.gateways {
		if g.namespace == namespace && g.pod.Name == pod && g.pod.UID == uid && g.port == port {
			return g, g.down == ""
		}
	}
	return nil, false
}

// gatewayErr is how SqlGatewayRestEndpoint answers an exception its
// handler did not turn into a RestHandlerException
// (AbstractHandler#handleException): 500, "Internal server error." and
// the stack trace in angle brackets.
func gatewayErr(format string, args ...any) error {
	return &apiError{code: http.StatusInternalServerError, msg: "Internal server error.\x00<" + fmt.Sprintf(format, args...) + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)>"}
}

// expire is SessionManagerImpl's cleanup, run every check-interval from
// the gateway's start: a session idle for longer than idle-timeout at a
// check is closed. Zero or negative values disable it.
func (g *sqlGateway) expire(now time.Time) {
	if g.idle <= 0 || g.check <= 0 {
		return
	}
	for h, s := range g.sessions {
		threshold := s.lastAccess.Add(g.idle)
		// The first check strictly after the threshold.
		n := threshold.Sub(g.started)/g.check + 1
		if at := g.started.Add(n * g.check); !at.After(now) {
			delete(g.sessions, h)
		}
	}
}

// session is SessionManagerImpl#getSession: it touches the session.
func (g *sqlGateway) session(handle string, now time.Time) (*sqlSession, error) {
	g.expire(now)
	s := g.sessions[handle]
	if s == nil {
		return nil, gatewayErr("org.apache.flink.table.gateway.api.utils.SqlGatewayException: Session '%s' does not exist.", handle)
	}
	s.lastAccess = now
	return s, nil
}

// gatewayCall runs one SQL Gateway REST operation.
func (e *Engine) gatewayCall(g *sqlGateway, version int, opID string, params map[string]string, body map[string]any, query map[string]string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	g.expire(now)
	switch opID {
	case "getApiVersion":
		vs := []string{}
		for i := 1; i <= flinkschema.GatewayVersions(g.version.Line().String()); i++ {
			vs = append(vs, fmt.Sprintf("V%d", i))
		}
		return map[string]any{"versions": vs}, nil
	case "getInfo":
		return map[string]any{"productName": "Apache Flink", "version": g.version.String()}, nil
	case "openSession":
		props := map[string]string{}
		for k, v := range g.conf.values {
			props[k] = v
		}
		if m, ok := body["properties"].(map[string]any); ok {
			for k, v := range m {
				props[k] = fmt.Sprint(v)
			}
		}
		s := &sqlSession{handle: uuid(), props: props, lastAccess: now, cat: newSQLCatalog(), ops: map[string]*sqlOperation{}}
		g.sessions[s.handle] = s
		return map[string]any{"sessionHandle": s.handle}, nil
	}
	s, err := g.session(params["session_handle"], now)
	if err != nil {
		return nil, err
	}
	switch opID {
	case "getSessionConfig":
		return map[string]any{"properties": s.props}, nil
	case "closeSession":
		delete(g.sessions, s.handle)
		return map[string]any{"status": "CLOSED"}, nil
	case "triggerSession":
		return struct{}{}, nil
	case "configureSession":
		stmt, _ := body["statement"].(string)
		st, err := parseSQL(stmt)
		if err == nil {
			switch st.kind {
			case sqlSet, sqlReset, sqlCreateTable, sqlCreateView:
				_, err = e.runStatement(g, s, st, nil, now, "")
			default:
				err = fmt.Errorf("java.lang.UnsupportedOperationException: Unsupported statement for configuring session:%s\nThe configureSession API only supports to execute statement of type CREATE TABLE, DROP TABLE, ALTER TABLE, CREATE DATABASE, DROP DATABASE, ALTER DATABASE, CREATE FUNCTION, DROP FUNCTION, ALTER FUNCTION, CREATE CATALOG, DROP CATALOG, USE CATALOG, USE [CATALOG.]DATABASE, CREATE VIEW, DROP VIEW, LOAD MODULE, UNLOAD MODULE, USE MODULE, ADD JAR.", stmt)
			}
		}
		if err != nil {
			return nil, gatewayErr("org.apache.flink.table.gateway.api.utils.SqlGatewayException: Failed to configure session.\nCaused by: %s", err)
		}
		return struct{}{}, nil
	case "executeStatement":
		stmt, _ := body["statement"].(string)
		exec := map[string]string{}
		if m, ok := body["executionConfig"].(map[string]any); ok {
			for k, v := range m {
				exec[k] = fmt.Sprint(v)
			}
		}
		op := &sqlOperation{handle: uuid(), ready: now.Add(e.opts.StatementDelay)}
		// OperationExecutor#executeStatement runs in the operation's
		// thread: a statement that does not parse is a failed operation,
		// not a failed request.
		st, err := parseSQL(stmt)
		if err == nil {
			op, err = e.runStatement(g, s, st, exec, now, op.handle)
			if op == nil {
				op = &sqlOperation{}
			}
			op.ready = now.Add(e.opts.StatementDelay)
		}
		if op.handle == "" {
			op.handle = uuid()
		}
		op.err = err
		s.ops[op.handle] = op
		return map[string]any{"operationHandle": op.handle}, nil
	}
	op := s.ops[params["operation_handle"]]
	if op == nil {
		return nil, gatewayErr("org.apache.flink.table.gateway.api.utils.SqlGatewayException: Failed to getOperationInfo.\nCaused by: org.apache.flink.table.gateway.service.utils.SqlExecutionException: Can not find the submitted operation in the OperationManager with the %s.", params["operation_handle"])
	}
	switch opID {
	case "getOperationStatus":
		return map[string]any{"status": op.status(now)}, nil
	case "cancelOperation":
		if op.status(now) == "RUNNING" {
			op.canceled = true
		}
		return map[string]any{"status": op.status(now)}, nil
	case "closeOperation":
		delete(s.ops, op.handle)
		return map[string]any{"status": "CLOSED"}, nil
	case "fetchResults":
		return op.fetch(g, version, s.handle, params["token"], query, now)
	}
	return nil, handlerErr(http.StatusNotImplemented, "%s: Flink %s's SQL Gateway serves this operation; the Flink REST simulator does not", opID, g.version)
}

func (op *sqlOperation) status(now time.Time) string {
	switch {
	case op.canceled:
		return "CANCELED"
	case now.Before(op.ready):
		return "RUNNING"
	case op.err != nil:
		return "ERROR"
	}
	return "FINISHED"
}

// fetch is ResultFetcher#fetchResults behind FetchResultsHandler: while the
// operation runs, NOT_READY and the same token again; then the rows
// (PAYLOAD) and the next token, whose fetch is the end (EOS). A failed
// operation's fetch throws its failure.
func (op *sqlOperation) fetch(g *sqlGateway, version int, session, token string, query map[string]string, now time.Time) (any, error) {
	tok, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return nil, handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve path parameter (token) from value \"%s\".", token)
	}
	format := query["rowFormat"]
	if version >= 2 && format == "" {
		return nil, handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Missing required query parameter rowFormat.")
	}
	if format != "" && format != "JSON" && format != "PLAIN_TEXT" {
		return nil, handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (rowFormat) from value \"%s\".", format)
	}
	next := func(t int64) string {
		u := fmt.Sprintf("/v%d/sessions/%s/operations/%s/result/%d", version, session, op.handle, t)
		if format != "" {
			u += "?rowFormat=" + format
		}
		return u
	}
	cols := []map[string]any{}
	for _, c := range op.columns {
		cols = append(cols, map[string]any{"name": c.name, "logicalType": map[string]any{"type": c.typ, "nullable": true, "length": 2147483647}})
	}
	results := map[string]any{"columns": cols, "rowFormat": orJSON(format), "data": []any{}}
	out := map[string]any{"results": results, "isQueryResult": false}
	switch st := op.status(now); st {
	case "RUNNING":
		out["resultType"] = "NOT_READY"
		out["nextResultUri"] = next(tok)
		return out, nil
	case "CANCELED":
		return nil, gatewayErr("org.apache.flink.table.gateway.api.utils.SqlGatewayException: Failed to fetchResults.\nCaused by: org.apache.flink.table.gateway.service.utils.SqlExecutionException: Can not fetch results from the CANCELED operation %s.", op.handle)
	case "ERROR":
		return nil, gatewayErr("org.apache.flink.table.gateway.api.utils.SqlGatewayException: Failed to fetchResults.\nCaused by: org.apache.flink.table.gateway.service.utils.SqlExecutionException: Failed to execute the operation %s.\nCaused by: %s", op.handle, op.err)
	}
	kind := "SUCCESS_WITH_CONTENT"
	if op.ok {
		kind = "SUCCESS"
	}
	out["resultKind"] = kind
	if op.jobID != "" {
		out["jobID"] = op.jobID
	}
	if tok > 0 {
		out["resultType"] = "EOS"
		return out, nil
	}
	rows := []any{}
	for _, r := range op.rows {
		fields := make([]any, len(r))
		for i, f := range r {
			fields[i] = f
		}
		rows = append(rows, map[string]any{"kind": "INSERT", "fields": fields})
	}
	results["data"] = rows
	out["resultType"] = "PAYLOAD"
	out["nextResultUri"] = next(1)
	return out, nil
}

func orJSON(f string) string {
	if f == "" {
		return "JSON"
	}
	return f
}

// okResult is the result of a statement that only changes the session:
// one row "OK" in a column "result" (TableResultImpl.TABLE_RESULT_OK).
func okResult(handle string) *sqlOperation {
	return &sqlOperation{handle: handle, columns: []sqlColumn{{"result", "VARCHAR"}}, rows: [][]string{{"OK"}}, ok: true}
}

// runStatement is OperationExecutor#executeStatement for the subset: the
// session's configuration changes, its catalog, a plan (EXPLAIN) or a job
// submitted to the cluster the gateway points at (INSERT, statement set).
func (e *Engine) runStatement(g *sqlGateway, s *sqlSession, st *sqlStatement, exec map[string]string, now time.Time, handle string) (*sqlOperation, error) {
	official := officialImage(g.pod.Image)
	switch st.kind {
	case sqlSet:
		if st.key == "" {
			op := &sqlOperation{handle: handle, columns: []sqlColumn{{"key", "VARCHAR"}, {"value", "VARCHAR"}}}
			keys := make([]string, 0, len(s.props))
			for k := range s.props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				op.rows = append(op.rows, []string{k, s.props[k]})
			}
			return op, nil
		}
		s.props[st.key] = st.value
		return okResult(handle), nil
	case sqlReset:
		// ResetOperation: back to the gateway's own configuration.
		if st.key == "" {
			s.props = map[string]string{}
			for k, v := range g.conf.values {
				s.props[k] = v
			}
		} else if v, ok := g.conf.values[st.key]; ok {
			s.props[st.key] = v
		} else {
			delete(s.props, st.key)
		}
		return okResult(handle), nil
	case sqlCreateTable, sqlCreateView:
		if err := s.cat.create(st); err != nil {
			return nil, err
		}
		return okResult(handle), nil
	case sqlExplain:
		inner := st.explained
		if inner.kind == sqlSelect {
			if err := s.cat.resolve(inner.query, map[string]bool{}); err != nil {
				return nil, err
			}
			pl := &planner{cat: s.cat, official: official, plan: &sqlPlan{}, sources: map[string]int{}}
			if _, _, _, err := pl.query(inner.query); err != nil {
				return nil, err
			}
			return &sqlOperation{handle: handle, columns: []sqlColumn{{"result", "VARCHAR"}}, rows: [][]string{{pl.plan.explain()}}}, nil
		}
		plan, err := s.cat.planInserts(inner.inserts, official)
		if err != nil {
			return nil, err
		}
		return &sqlOperation{handle: handle, columns: []sqlColumn{{"result", "VARCHAR"}}, rows: [][]string{{plan.explain()}}}, nil
	case sqlInsert, sqlStatementSet:
		plan, err := s.cat.planInserts(st.inserts, official)
		if err != nil {
			return nil, err
		}
		values := map[string]string{}
		for k, v := range s.props {
			values[k] = v
		}
		for k, v := range exec {
			values[k] = v
		}
		cf := &conf{version: g.version, minor: g.conf.minor, values: values}
		id, err := e.submitSQL(g, cf, plan, now)
		if err != nil {
			name := plan.name
			if n, ok := cf.raw("pipeline.name"); ok {
				name = n
			}
			return nil, fmt.Errorf("org.apache.flink.table.api.TableException: Failed to execute sql\nCaused by: org.apache.flink.util.FlinkException: Failed to execute job '%s'.\nCaused by: %w", name, err)
		}
		return &sqlOperation{handle: handle, jobID: id, columns: []sqlColumn{{"job id", "VARCHAR"}}, rows: [][]string{{id}}}, nil
	}
	return nil, fmt.Errorf("org.apache.flink.table.api.TableException: The Flink REST simulator's SQL Gateway does not run SELECT queries (no results are simulated)")
}

// submitSQL is what TableEnvironmentImpl#executeInternal does with a
// planned INSERT: the StreamGraph becomes a JobGraph with the client's
// configuration (PipelineExecutorUtils#getJobGraph, #getStreamGraph from
// 2.1: $internal.pipeline.job-id, PipelineOptionsInternal.
// PIPELINE_FIXED_JOB_ID, fixes its ID; the savepoint restore settings come
// from execution.savepoint.* / execution.state-recovery.*), and the
// RemoteExecutor's RestClusterClient submits it to the JobManager that
// rest.address:rest.port reaches (the HA leader's REST address when the
// client's configuration names high availability) with POST /jobs.
func (e *Engine) submitSQL(g *sqlGateway, cf *conf, plan *sqlPlan, now time.Time) (string, error) {
	if t, _ := cf.raw("execution.target"); t != "" && t != "remote" {
		return "", fmt.Errorf("java.lang.IllegalStateException: execution.target %q runs the job outside the cluster; the Flink REST simulator models only remote", t)
	}
	c, jm, err := e.gatewayJobManager(g, cf)
	if err != nil {
		return "", err
	}
	e.advance(c, now)
	c.requests["POST /jobs"]++
	if c.unavailable != 0 {
		if c.unavailable > 0 {
			c.unavailable--
		}
		return "", fmt.Errorf("org.apache.flink.runtime.rest.util.RestClientException: [Service temporarily unavailable due to an ongoing leader election. Please refresh.]")
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return "", fmt.Errorf("org.apache.flink.runtime.rest.util.RestClientException: [%s]", err.(*apiError).msg)
	}
	sub, err := sqlSubmission(cf, jm, plan)
	if err != nil {
		return "", err
	}
	if err := d.submit(e, c, now, sub); err != nil {
		return "", fmt.Errorf("org.apache.flink.runtime.client.JobSubmissionException: Failed to submit JobGraph.\nCaused by: %w", err)
	}
	e.advance(c, now)
	return sub.id, nil
}

// gatewayJobManager is the JobManager process the gateway's client
// reaches, and its cluster.
func (e *Engine) gatewayJobManager(g *sqlGateway, cf *conf) (*cluster, *process, error) {
	if id := haIdentity(cf); id != "" {
		// The HA services' leader retrieval (ClusterRestEndpoint leader).
		for _, c := range e.clusters {
			if s := c.ha[id]; s != nil && c.key.Namespace == g.namespace {
				for _, p := range c.jms {
					if p.id() == s.leader && p.serving() {
						return c, p, nil
					}
				}
			}
		}
		return nil, nil, fmt.Errorf("org.apache.flink.util.FlinkException: Could not retrieve the leader address of the REST endpoint from the high-availability services")
	}
	host, ok := cf.raw("rest.address")
	if !ok || strings.TrimSpace(host) == "" {
		return nil, nil, fmt.Errorf("java.lang.NullPointerException: rest.address must be set")
	}
	port := int32(RESTPort)
	if s, ok := cf.raw("rest.port"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, nil, parseErr("rest.port", s, err)
		}
		port = int32(n)
	}
	var eps []Endpoint
	switch host {
	case "localhost", "127.0.0.1", "0.0.0.0":
		// The gateway's own pod: a JobManager beside it, or nothing.
		eps = []Endpoint{{Pod: g.pod.UID, Port: port}}
	default:
		if n := e.gatewayNets[g.namespace]; n != nil {
			eps = n.Dial(host, port)
		}
	}
	for _, ep := range eps {
		for _, c := range e.clusters {
			for _, p := range c.jms {
				if p.pod.UID == ep.Pod && p.restPort == ep.Port && p.serving() {
					return c, p, nil
				}
			}
		}
	}
	return nil, nil, fmt.Errorf("org.apache.flink.runtime.rest.ConnectionException: Could not connect to %s:%d (java.net.ConnectException: Connection refused)", host, port)
}

// sqlSubmission is the JobGraph of a plan: every vertex at the table
// program's parallelism (table.exec.resource.default-parallelism, else
// parallelism.default), its max parallelism pipeline.max-parallelism or
// Flink's default for that parallelism; the job's configuration the
// cluster's with the client's over it (the client's travels in the
// JobGraph and wins).
func sqlSubmission(cf *conf, jm *process, plan *sqlPlan) (*submission, error) {
	values := map[string]string{}
	for k, v := range jm.conf.values {
		values[k] = v
	}
	for k, v := range cf.values {
		values[k] = v
	}
	job := &conf{version: jm.version, minor: jm.conf.minor, values: values}
	if _, _, err := job.duration("execution.checkpointing.interval"); err != nil {
		return nil, err
	}
	sub := &submission{conf: job, name: plan.name}
	if n, ok := cf.raw("pipeline.name"); ok {
		sub.name = n
	}
	sub.id = newID()
	if id, ok := cf.raw("$internal.pipeline.job-id"); ok {
		if !hexID.MatchString(id) {
			return nil, fmt.Errorf("java.lang.IllegalArgumentException: Cannot parse JobID from \"%s\". The expected format is [0-9a-fA-F]{32}, e.g. fd72014d4c864993a2e5a9287b4a9c5d.", id)
		}
		sub.id = strings.ToLower(id)
	}
	p, err := cf.integer("table.exec.resource.default-parallelism")
	if err != nil {
		return nil, err
	}
	if p <= 0 {
		if p, err = cf.integer("parallelism.default"); err != nil {
			return nil, err
		}
	}
	sub.parallelism = max(1, p)
	pathKey, modeKey, ignoreKey := savepointKeys(jm.version)
	sub.restorePath, _ = cf.raw(pathKey)
	if sub.allowNonRestored, err = cf.boolean(ignoreKey); err != nil {
		return nil, err
	}
	if sub.claimMode, err = cf.enum(modeKey, "CLAIM", "NO_CLAIM", "LEGACY"); err != nil {
		return nil, err
	}
	configured := -1
	if _, ok := cf.value("pipeline.max-parallelism"); ok {
		if configured, err = cf.integer("pipeline.max-parallelism"); err != nil {
			return nil, err
		}
	}
	for _, v := range plan.jobVertices() {
		x := &vertex{id: v.id, name: v.name, stateful: v.stateful, parallelism: sub.parallelism, lower: 1, upper: sub.parallelism}
		if configured > 0 {
			x.maxParallelism, x.explicitMax = configured, true
		} else {
			x.maxParallelism = defaultMaxParallelism(sub.parallelism)
		}
		sub.graph = append(sub.graph, x)
	}
	return sub, nil
}
