package flinksim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

// gatewayFixture is a session cluster (key) with a SQL Gateway pod beside
// it, behind the Service demo-sql-gateway:8083, whose client reaches the
// JobManager at jobmanager:8081.
type gatewayFixture struct {
	t      *testing.T
	e      *Engine
	clk    *fakeClock
	srv    *httptest.Server
	schema *flinkschema.Schema
	base   string
}

func newGatewayFixture(t *testing.T, version string, gwSettings map[string]string) *gatewayFixture {
	t.Helper()
	e, clk := newTestEngine(t)
	sc := simple(tms(2), nil)
	sc.Version, sc.Env = version, s3Plugin(version)
	o := sc.Observation()
	e.Observe(key, o)
	settings := map[string]string{
		"rest.address": "jobmanager", "rest.port": "8081", "execution.target": "remote",
		"sql-gateway.endpoint.rest.address": "0.0.0.0",
		"state.savepoints.dir":              "s3://bucket/savepoints",
	}
	for k, v := range gwSettings {
		if v == "" {
			delete(settings, k)
		} else {
			settings[k] = v
		}
	}
	gw := GatewayPod{Container: "sql-gateway", Pod: Pod{
		UID: "gw-1", Name: "gw-1", Running: true, Ready: true, Image: "flink:" + version, Hostname: "gw-1",
		Conf: ConfFiles(version, settings), Env: s3Plugin(version),
	}, Services: []Service{{Name: "demo-sql-gateway", Ports: map[int32][]Endpoint{8083: {{Pod: "gw-1", Port: 8083}}}}}}
	net := staticNetwork{"jobmanager:8081": {{Pod: "jm-1", Port: RESTPort}}}
	e.ObserveGateways(key.Namespace, []GatewayPod{gw}, net)
	v, _ := flink.ParseVersion(version)
	schema, err := flinkschema.ForGateway(v.Line().String(), 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(e, logr.Discard()))
	t.Cleanup(srv.Close)
	return &gatewayFixture{t: t, e: e, clk: clk, srv: srv, schema: schema, base: srv.URL + "/clusters/team-a/demo-sql-gateway:8083/v2"}
}

// call sends one request and validates a 200 answer against the minor's
// v2 gateway schema; it returns the status and the decoded body.
func (f *gatewayFixture) call(method, path string, body any) (int, map[string]any) {
	f.t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		if err := f.schema.ValidateValue(requestComponent(f.schema, method, path), body); err != nil {
			f.t.Fatalf("request body: %v", err)
		}
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.base+path, in)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	u := path
	if i := strings.Index(u, "?"); i >= 0 {
		u = u[:i]
	}
	if resp.StatusCode == http.StatusOK {
		if err := f.schema.ValidateResponse(method, u, resp.StatusCode, raw); err != nil {
			f.t.Errorf("response: %v\n%s", err, raw)
		}
	}
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func requestComponent(s *flinkschema.Schema, method, path string) string {
	u, _, _ := strings.Cut(path, "?")
	_, op, _, err := s.Operation(method, u)
	if err != nil {
		return ""
	}
	name, _ := s.RequestBody(op)
	return name
}

func (f *gatewayFixture) open(props map[string]string) string {
	f.t.Helper()
	if props == nil {
		props = map[string]string{}
	}
	code, out := f.call(http.MethodPost, "/sessions", map[string]any{"properties": props})
	if code != http.StatusOK {
		f.t.Fatalf("open session: %d %v", code, out)
	}
	return out["sessionHandle"].(string)
}

// run executes a statement and waits for its operation to end; it returns
// the final status and the first fetch's body (or error body).
func (f *gatewayFixture) run(session, stmt string) (string, int, map[string]any) {
	f.t.Helper()
	code, out := f.call(http.MethodPost, "/sessions/"+session+"/statements", map[string]any{"statement": stmt})
	if code != http.StatusOK {
		f.t.Fatalf("execute %q: %d %v", stmt, code, out)
	}
	op := out["operationHandle"].(string)
	_, st := f.call(http.MethodGet, "/sessions/"+session+"/operations/"+op+"/status", nil)
	if st["status"] != "RUNNING" {
		f.t.Fatalf("a new operation is %v, want RUNNING", st["status"])
	}
	code, res := f.call(http.MethodGet, "/sessions/"+session+"/operations/"+op+"/result/0?rowFormat=JSON", nil)
	if code != http.StatusOK || res["resultType"] != "NOT_READY" {
		f.t.Fatalf("fetch while running: %d %v", code, res)
	}
	f.clk.step(DefaultStatementDelay)
	_, st = f.call(http.MethodGet, "/sessions/"+session+"/operations/"+op+"/status", nil)
	code, res = f.call(http.MethodGet, "/sessions/"+session+"/operations/"+op+"/result/0?rowFormat=JSON", nil)
	return st["status"].(string), code, res
}

func (f *gatewayFixture) ok(session string, stmts ...string) {
	f.t.Helper()
	for _, s := range stmts {
		if st, code, res := f.run(session, s); st != "FINISHED" || code != http.StatusOK {
			f.t.Fatalf("%q: %s %d %v", s, st, code, res)
		}
	}
}

const (
	ddlOrders    = `CREATE TABLE orders (id BIGINT, amount DOUBLE, shop STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '10')`
	ddlTotals    = `CREATE TABLE totals (shop STRING, total DOUBLE) WITH ('connector' = 'blackhole')`
	insertTotals = `INSERT INTO totals SELECT shop, SUM(amount) FROM orders GROUP BY shop`
)

// An INSERT submitted through the gateway becomes a job on the cluster its
// client points at, under the ID $internal.pipeline.job-id fixes, with
// the vertices its plan chains; its result carries the job ID.
func TestGatewayInsertSubmitsJob(t *testing.T) {
	for _, version := range []string{"1.19.1", "2.0.0"} {
		t.Run(version, func(t *testing.T) {
			f := newGatewayFixture(t, version, nil)
			s := f.open(nil)
			const id = "0000000000000000000000000000abcd"
			f.ok(s, "SET '$internal.pipeline.job-id' = '"+id+"'", "SET 'parallelism.default' = '2'", ddlOrders, ddlTotals)
			st, code, res := f.run(s, insertTotals)
			if st != "FINISHED" || code != http.StatusOK {
				t.Fatalf("insert: %s %d %v", st, code, res)
			}
			if res["jobID"] != id || res["resultKind"] != "SUCCESS_WITH_CONTENT" || res["resultType"] != "PAYLOAD" {
				t.Fatalf("insert result: %v", res)
			}
			data := res["results"].(map[string]any)["data"].([]any)
			if fields := data[0].(map[string]any)["fields"].([]any); fields[0] != id {
				t.Fatalf("row: %v", data)
			}
			f.clk.step(3 * time.Second)
			j, err := f.e.Job(key, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != flink.JobRunning || j.Name != "insert-into_default_catalog.default_database.totals" {
				t.Fatalf("job: %s %q", j.State, j.Name)
			}
			var names []string
			for _, v := range j.Vertices {
				names = append(names, fmt.Sprintf("%s@%d", v.Name, v.Parallelism))
			}
			if got, want := strings.Join(names, " | "), "Source: orders[1]@2 | GroupAggregate[2] -> Sink: totals[3]@2"; got != want {
				t.Fatalf("vertices %q, want %q", got, want)
			}
			v, _ := f.e.View(key)
			if v.Requests["POST /jobs"] != 1 {
				t.Fatalf("POST /jobs reached the JobManager %d times", v.Requests["POST /jobs"])
			}
			// The same fixed ID again while it runs: Dispatcher#submitJob refuses.
			st, code, res = f.run(s, insertTotals)
			if st != "ERROR" || code != http.StatusInternalServerError || !strings.Contains(fmt.Sprint(res["errors"]), "DuplicateJobSubmissionException") {
				t.Fatalf("resubmission: %s %d %v", st, code, res)
			}
		})
	}
}

// Syntax outside the subset fails the operation with the parser's error,
// and validation failures with the planner's; nothing reaches the cluster.
func TestGatewayRefusesWhatFlinkRefuses(t *testing.T) {
	f := newGatewayFixture(t, "1.20.1", nil)
	s := f.open(nil)
	f.ok(s, ddlOrders, ddlTotals,
		`CREATE TABLE kafka_out (shop STRING, total DOUBLE) WITH ('connector' = 'kafka', 'properties.sasl.jaas.config' = 'secret-value')`,
		`CREATE TABLE files (shop STRING, total DOUBLE) WITH ('connector' = 'filesystem', 'path' = 's3://b/out', 'format' = 'csv')`)
	for _, c := range []struct{ stmt, want string }{
		{"SELEC shop FROM orders", `org.apache.flink.table.api.SqlParserException: SQL parse failed. Encountered "SELEC" at line 1, column 1.`},
		{"INSERT INTO totals SELECT shop FROM orders ORDER BY shop", `SQL parse failed. Encountered "ORDER" at line 1, column 44.`},
		{"INSERT INTO totals SELECT shop, SUM(amount) FROM missing GROUP BY shop", "Object 'missing' not found"},
		{"INSERT INTO kafka_out SELECT shop, amount FROM orders", "Could not find any factory for identifier 'kafka' that implements 'org.apache.flink.table.factories.DynamicTableFactory' in the classpath."},
		{"INSERT INTO files SELECT shop, SUM(amount) FROM orders GROUP BY shop", "Table sink 'default_catalog.default_database.files' doesn't support consuming update changes which is produced by node GroupAggregate"},
		{"INSERT INTO orders SELECT id, amount, shop FROM orders", "Connector 'datagen' can only be used as a source. It cannot be used as a sink."},
		{"EXPLAIN INSERT INTO kafka_out SELECT shop, amount FROM orders", "Could not find any factory for identifier 'kafka'"},
	} {
		st, code, res := f.run(s, c.stmt)
		errs := fmt.Sprint(res["errors"])
		if st != "ERROR" || code != http.StatusInternalServerError || !strings.Contains(errs, c.want) {
			t.Errorf("%q: %s %d %s, want an error containing %q", c.stmt, st, code, errs, c.want)
		}
		if strings.Contains(errs, "secret-value") {
			t.Errorf("%q: a sensitive option's value is in the error: %s", c.stmt, errs)
		}
	}
	v, _ := f.e.View(key)
	if v.Requests["POST /jobs"] != 0 || len(v.Jobs) != 0 {
		t.Fatalf("refused statements reached the cluster: %v %v", v.Requests, v.Jobs)
	}
	// EXPLAIN of a script that plans answers the plan and runs nothing.
	st, _, res := f.run(s, "EXPLAIN "+insertTotals)
	data := res["results"].(map[string]any)["data"].([]any)
	if st != "FINISHED" || !strings.Contains(fmt.Sprint(data), "GroupAggregate[2] -> Sink: totals[3]") {
		t.Fatalf("explain: %s %v", st, res)
	}
	if v, _ := f.e.View(key); len(v.Jobs) != 0 {
		t.Fatalf("EXPLAIN ran a job: %v", v.Jobs)
	}
}

// plan parses and plans a script's statements in a fresh catalog.
func plan(t *testing.T, stmts ...string) []sqlVertex {
	t.Helper()
	cat := newSQLCatalog()
	for _, s := range stmts {
		st, err := parseSQL(s)
		if err != nil {
			t.Fatal(err)
		}
		switch st.kind {
		case sqlCreateTable, sqlCreateView:
			if err := cat.create(st); err != nil {
				t.Fatal(err)
			}
		case sqlInsert, sqlStatementSet:
			p, err := cat.planInserts(st.inserts, true)
			if err != nil {
				t.Fatal(err)
			}
			return p.jobVertices()
		}
	}
	t.Fatal("no INSERT")
	return nil
}

func ids(vs []sqlVertex) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.id
	}
	return out
}

// Operator IDs come from the plan's structure (StreamGraphHasherV2): the
// same script gives the same IDs, a renamed table keeps them, an operator
// added upstream changes those after it; a join and a statement set shape
// the graph as the planner does.
func TestSQLPlanOperatorIDs(t *testing.T) {
	base := plan(t, ddlOrders, ddlTotals, insertTotals)
	if again := plan(t, ddlOrders, ddlTotals, insertTotals); strings.Join(ids(again), ",") != strings.Join(ids(base), ",") {
		t.Fatalf("the same script hashed differently: %v %v", ids(base), ids(again))
	}
	renamed := plan(t, strings.Replace(ddlOrders, "orders", "orders_v2", 1), ddlTotals, strings.Replace(insertTotals, "orders", "orders_v2", 1))
	if strings.Join(ids(renamed), ",") != strings.Join(ids(base), ",") || renamed[0].name != "Source: orders_v2[1]" {
		t.Fatalf("renaming a table changed the IDs: %v %v", ids(base), ids(renamed))
	}
	filtered := plan(t, ddlOrders, ddlTotals, "INSERT INTO totals SELECT shop, SUM(amount) FROM orders WHERE amount > 0 GROUP BY shop")
	// The source now chains the Calc (one chainable output, not none),
	// so its hash changes too, and the aggregate's with its input's.
	if filtered[0].id == base[0].id || filtered[1].id == base[1].id {
		t.Fatalf("a filter after the source kept an ID: source %v→%v, aggregate %v→%v", base[0].id, filtered[0].id, base[1].id, filtered[1].id)
	}
	projected := plan(t, ddlOrders, ddlTotals, "INSERT INTO totals SELECT shop, SUM(amount) FROM orders GROUP BY shop HAVING SUM(amount) > 0")
	if strings.Join(ids(projected), ",") != strings.Join(ids(base), ",") {
		t.Fatalf("a HAVING inside the aggregate changed the graph's IDs: %v %v", ids(base), ids(projected))
	}
	if filtered[0].name != "Source: orders[1] -> Calc[2]" {
		t.Fatalf("filter chained: %q", filtered[0].name)
	}
	joined := plan(t, ddlOrders, ddlTotals,
		`CREATE TABLE shops (shop STRING, region STRING) WITH ('connector' = 'datagen')`,
		`CREATE TEMPORARY VIEW enriched AS SELECT o.shop, o.amount FROM orders AS o JOIN shops s ON o.shop = s.shop`,
		`INSERT INTO totals SELECT shop, SUM(amount) FROM enriched GROUP BY shop`)
	var names []string
	for _, v := range joined {
		names = append(names, v.name)
	}
	if got := strings.Join(names, " | "); got != "Source: orders[1] | Source: shops[2] | Join[3] -> Calc[4] | GroupAggregate[5] -> Sink: totals[6]" {
		t.Fatalf("join plan: %q", got)
	}
	set := plan(t, ddlOrders, ddlTotals, `CREATE TABLE audit (id BIGINT) WITH ('connector' = 'print')`,
		`EXECUTE STATEMENT SET BEGIN INSERT INTO totals SELECT shop, SUM(amount) FROM orders GROUP BY shop; INSERT INTO audit SELECT id FROM orders; END`)
	names = nil
	for _, v := range set {
		names = append(names, v.name)
	}
	// One source serves both INSERTs (table.optimizer.reuse-source-enabled).
	if got := strings.Join(names, " | "); got != "Source: orders[1] -> Calc[4] -> Sink: audit[5] | GroupAggregate[2] -> Sink: totals[3]" {
		t.Fatalf("statement set plan: %q", got)
	}
}

// A script whose plan drops a stateful operator cannot restore a savepoint
// of the old one unless the session allows non-restored state, as a jar
// cannot (Checkpoints#loadAndValidateCheckpoint).
func TestGatewayRestoreNeedsMatchingOperators(t *testing.T) {
	f := newGatewayFixture(t, "1.19.1", nil)
	s := f.open(nil)
	const id = "000000000000000000000000000000aa"
	f.ok(s, "SET '$internal.pipeline.job-id' = '"+id+"'", ddlOrders, ddlTotals, insertTotals)
	f.clk.step(3 * time.Second)
	sp, err := f.e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TargetDirectory: "s3://bucket/savepoints"})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.step(3 * time.Second)
	st, err := f.e.SavepointStatus(key, id, sp.RequestID)
	if err != nil || st.Operation == nil || st.Operation.Location == "" {
		t.Fatalf("stop: %+v %v", st, err)
	}
	changed := "INSERT INTO totals SELECT shop, SUM(amount) FROM orders WHERE amount > 0 GROUP BY shop"
	for _, c := range []struct {
		allow string
		want  flink.JobStatus
	}{{"false", flink.JobFailed}, {"true", flink.JobRunning}} {
		s2 := f.open(nil)
		next := fmt.Sprintf("%030d%s", 0, map[string]string{"false": "b1", "true": "b2"}[c.allow])
		f.ok(s2, "SET '$internal.pipeline.job-id' = '"+next+"'", "SET 'execution.savepoint.path' = '"+st.Operation.Location+"'",
			"SET 'execution.savepoint.ignore-unclaimed-state' = '"+c.allow+"'", ddlOrders, ddlTotals, changed)
		f.clk.step(3 * time.Second)
		if got := jobState(t, f.e, next); got != c.want {
			t.Errorf("allowNonRestoredState %s: %s, want %s", c.allow, got, c.want)
		}
	}
}

// Sessions live in the gateway's memory and close after
// sql-gateway.session.idle-timeout without a request, at the next check
// (SessionManagerImpl); a heartbeat keeps one alive.
func TestGatewaySessionIdleTimeout(t *testing.T) {
	f := newGatewayFixture(t, "1.20.1", map[string]string{"sql-gateway.session.idle-timeout": "1 min", "sql-gateway.session.check-interval": "30 s"})
	idle, kept := f.open(nil), f.open(nil)
	for i := 0; i < 3; i++ {
		f.clk.step(40 * time.Second)
		if code, out := f.call(http.MethodPost, "/sessions/"+kept+"/heartbeat", nil); code != http.StatusOK {
			t.Fatalf("heartbeat: %d %v", code, out)
		}
	}
	code, out := f.call(http.MethodGet, "/sessions/"+idle, nil)
	if code != http.StatusInternalServerError || !strings.Contains(fmt.Sprint(out["errors"]), "Session '"+idle+"' does not exist.") {
		t.Fatalf("idle session after 120 s: %d %v", code, out)
	}
	if code, out := f.call(http.MethodGet, "/sessions/"+kept, nil); code != http.StatusOK {
		t.Fatalf("session kept alive: %d %v", code, out)
	}
}

// A gateway whose REST endpoint has no address does not start
// (SqlGatewayRestEndpointFactory's required option): its port refuses
// connections. One pointed at no JobManager fails the INSERT.
func TestGatewayConfiguration(t *testing.T) {
	f := newGatewayFixture(t, "1.20.1", map[string]string{"sql-gateway.endpoint.rest.address": ""})
	if _, err := f.srv.Client().Post(f.base+"/sessions", "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("a gateway without sql-gateway.endpoint.rest.address answered")
	}
	f = newGatewayFixture(t, "1.20.1", map[string]string{"rest.address": "elsewhere"})
	s := f.open(nil)
	f.ok(s, ddlOrders, ddlTotals)
	st, _, res := f.run(s, insertTotals)
	if st != "ERROR" || !strings.Contains(fmt.Sprint(res["errors"]), "Could not connect to elsewhere:8081") {
		t.Fatalf("insert without a JobManager: %s %v", st, res)
	}
}
