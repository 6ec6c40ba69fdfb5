package sqlgateway_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/sqlgateway"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name, script string
		want         []string
	}{
		{"two statements", "SET 'a' = 'b';\nINSERT INTO t SELECT * FROM s;", []string{"SET 'a' = 'b'", "INSERT INTO t SELECT * FROM s"}},
		{"a ; in a literal", "SET 'x' = 'a;b'; SELECT 1", []string{"SET 'x' = 'a;b'", "SELECT 1"}},
		{"a doubled quote", "SET 'x' = 'it''s;'; SELECT 1", []string{"SET 'x' = 'it''s;'", "SELECT 1"}},
		{"comments", "-- a; comment\nSET 'a'='b'; /* ; */ SELECT 1;\n-- trailing", []string{"-- a; comment\nSET 'a'='b'", "/* ; */ SELECT 1"}},
		{"statement set", "CREATE TABLE t (a INT) WITH ('connector'='print');\nEXECUTE STATEMENT SET BEGIN\nINSERT INTO t SELECT 1;\nINSERT INTO t SELECT 2;\nEND;",
			[]string{"CREATE TABLE t (a INT) WITH ('connector'='print')", "EXECUTE STATEMENT SET BEGIN\nINSERT INTO t SELECT 1;\nINSERT INTO t SELECT 2;\nEND"}},
		{"statement set without a final ;", "EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT 1; END", []string{"EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT 1; END"}},
	} {
		got := sqlgateway.Split(c.script)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: Split = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSubstituteAndRedact(t *testing.T) {
	values := map[string]string{"KAFKA_PASSWORD": "s3cr'et"}
	stmt := "CREATE TABLE t (a INT) WITH ('properties.sasl.password' = '${KAFKA_PASSWORD}', 'x' = '${OTHER}')"
	got := sqlgateway.Substitute(stmt, values)
	if want := "CREATE TABLE t (a INT) WITH ('properties.sasl.password' = 's3cr''et', 'x' = '${OTHER}')"; got != want {
		t.Fatalf("Substitute = %q, want %q", got, want)
	}
	if p := sqlgateway.Placeholders(stmt); strings.Join(p, ",") != "KAFKA_PASSWORD,OTHER" {
		t.Fatalf("Placeholders = %v", p)
	}
	if msg := sqlgateway.Redact("Encountered \"s3cr''et\" near s3cr'et", values); strings.Contains(msg, "s3cr") {
		t.Fatalf("Redact left the secret: %q", msg)
	}
}

type network map[string][]flinksim.Endpoint

func (n network) Dial(host string, port int32) []flinksim.Endpoint {
	return n[host]
}

// gateway starts a simulated 1.20 session cluster with a SQL Gateway in its
// JobManager pod and returns a client of that gateway and the engine.
func gateway(t *testing.T) (*sqlgateway.Client, *flinksim.Engine) {
	t.Helper()
	e := flinksim.NewEngine(flinksim.EngineOptions{StatementDelay: 50 * time.Millisecond})
	sc := flinksim.SimpleCluster{Version: "1.20.1", JobManager: "jm-1", TaskManagers: []string{"tm-1"}, Settings: map[string]string{"taskmanager.numberOfTaskSlots": "4"}}
	e.Observe(flinksim.ClusterKey{Namespace: "ns", Name: "demo"}, sc.Observation())
	conf := flinksim.ConfFiles("1.20.1", map[string]string{"rest.address": "localhost", "rest.port": "8081", "execution.target": "remote", "sql-gateway.endpoint.rest.address": "0.0.0.0"})
	e.ObserveGateways("ns", []flinksim.GatewayPod{{Container: "sql-gateway",
		Pod:      flinksim.Pod{UID: "jm-1", Name: "jm-1", Running: true, Ready: true, Image: "flink:1.20.1", Conf: conf},
		Services: []flinksim.Service{{Name: "gw", Ports: map[int32][]flinksim.Endpoint{8083: {{Pod: "jm-1", Port: 8083}}}}}}}, network{})
	srv := httptest.NewServer(flinksim.NewHandler(e, logr.Discard()))
	t.Cleanup(srv.Close)
	c := sqlgateway.New(srv.URL+"/clusters/ns/gw:8083", srv.Client())
	c.Poll = 10 * time.Millisecond
	return c, e
}

const script = `SET 'pipeline.name' = 'orders-per-shop';
CREATE TABLE orders (id BIGINT, amount DOUBLE, shop STRING) WITH ('connector' = 'datagen');
CREATE TABLE totals (shop STRING, total DOUBLE) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT shop, SUM(amount) FROM orders GROUP BY shop;`

func TestSubmitAndExplain(t *testing.T) {
	c, e := gateway(t)
	ctx := context.Background()
	const id = "00000000000000000000000000001234"
	plan, err := c.Explain(ctx, nil, sqlgateway.Split(script))
	if err != nil || !strings.Contains(plan, "GroupAggregate") {
		t.Fatalf("Explain = %q, %v", plan, err)
	}
	if v, _ := e.View(flinksim.ClusterKey{Namespace: "ns", Name: "demo"}); len(v.Jobs) != 0 {
		t.Fatalf("EXPLAIN submitted a job: %+v", v.Jobs)
	}
	got, err := c.Submit(ctx, map[string]string{"$internal.pipeline.job-id": id}, sqlgateway.Split(script))
	if err != nil || got != id {
		t.Fatalf("Submit = %q, %v; want %s", got, err, id)
	}
	j, err := e.Job(flinksim.ClusterKey{Namespace: "ns", Name: "demo"}, id)
	if err != nil || j.Name != "orders-per-shop" {
		t.Fatalf("job: %+v %v", j, err)
	}
	bad := strings.Replace(script, "GROUP BY shop", "GRUOP BY shop", 1)
	_, err = c.Explain(ctx, nil, sqlgateway.Split(bad))
	if !sqlgateway.IsRefused(err) || !strings.Contains(err.Error(), `SQL parse failed. Encountered "BY" at line 1, column 71.`) {
		// GRUOP reads as the table's alias, as Calcite reads it.
		t.Fatalf("Explain of a bad script: %v", err)
	}
	if strings.Contains(err.Error(), "\tat ") {
		t.Fatalf("the refusal carries stack frames: %q", err)
	}
}
