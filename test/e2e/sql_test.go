package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// The secret a SQL job's Kafka tables need; it must never be written
// anywhere but the statements sent to the gateway.
const sqlSecretValue = "hunter2-sql-e2e"

// sqlScript reads orders from Kafka and writes each shop's revenue to an
// upsert-kafka topic; query is the INSERT's SELECT, sink the topic.
func sqlScript(query, sink string) string {
	return `SET 'pipeline.name' = 'revenue-per-shop';
CREATE TABLE orders (shop STRING, amount DOUBLE) WITH (
  'connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = 'kafka:9092', 'format' = 'json',
  'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="${KAFKA_PASSWORD}";');
CREATE TABLE revenue (shop STRING, total DOUBLE, PRIMARY KEY (shop) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '` + sink + `', 'properties.bootstrap.servers' = 'kafka:9092', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO revenue ` + query + `;
`
}

const revenueQuery = "SELECT shop, SUM(amount) FROM orders GROUP BY shop"

// sqlCluster is a SQL job on a derived image (the Kafka connector is no
// part of the official one), its script in a ConfigMap, its Kafka password
// in a Secret.
func sqlCluster(t *testing.T, ns, name, version string) *v1.FlinkCluster {
	t.Helper()
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka"}, StringData: map[string]string{"password": sqlSecretValue}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sql-scripts"}, Data: map[string]string{"revenue.sql": sqlScript(revenueQuery, "revenue")}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{
		Version: version, Image: "registry.example.com/flink-sql-kafka:" + version,
		JobManager:    v1.JobManagerSpec{Replicas: 1},
		TaskManager:   v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		Checkpointing: &v1.CheckpointingSpec{Interval: "1s", Retention: 3},
		Job: &v1.JobSpec{Parallelism: 2, State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint, SavepointRetention: 5,
			SQL: &v1.SQLJobSpec{ConfigMapRef: &v1.ConfigMapKeyRef{Name: "sql-scripts", Key: "revenue.sql"},
				SecretRefs: []v1.SQLSecretRef{{Placeholder: "KAFKA_PASSWORD", SecretKeyRef: v1.SecretKeyRef{Name: "kafka", Key: "password"}}}}},
		UpgradePolicy: &v1.UpgradePolicy{StableCheckpoints: 2, StabilityTimeout: "30s", SavepointTimeout: "20s", AutoRollback: ptr.To(true)},
	}
	return fc
}

func setScript(t *testing.T, ns, name, script string) {
	t.Helper()
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) {
		fc.Spec.Job.SQL.ConfigMapRef, fc.Spec.Job.SQL.Script = nil, script
	})
}

func vertexNames(j flinksim.JobView) string {
	var out []string
	for _, v := range j.Vertices {
		out = append(out, fmt.Sprintf("%s@%d", v.Name, v.Parallelism))
	}
	return strings.Join(out, " | ")
}

// TestSQLJobLifecycle runs a SQL job through the SQL Gateway on a 1.x and
// a 2.x minor: submitted, upgraded with a savepoint, a script that does
// not plan refused while the job runs on, a script that drops the
// aggregation's state rolled back, rescaled; no secret in any ConfigMap or
// event.
func TestSQLJobLifecycle(t *testing.T) {
	parallel(t)
	for _, c := range []struct{ name, version string }{{"v1-19", "1.19.3"}, {"v2-0", "2.0.1"}} {
		t.Run(c.name, func(t *testing.T) {
			parallel(t)
			sqlJobLifecycle(t, c.version)
		})
	}
}

func sqlJobLifecycle(t *testing.T, version string) {
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "revenue"
	key := simKey(ns, name)
	fc := sqlCluster(t, ns, name, version)
	eventually(t, 30*time.Second, "create the SQL cluster", func() error { return k8s.Create(ctx, fc.DeepCopy()) })
	waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	var first string
	eventually(t, time.Minute, "SQL job running and stable", func() error {
		fc := getFC(t, ns, name)
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		first = fc.Status.Job.ID
		return nil
	})

	// Submitted through the gateway beside the JobManager, under the ID the
	// operator recorded, with the plan's vertices.
	j := simJob(t, key, first)
	if j.Name != "revenue-per-shop" || vertexNames(j) != "Source: orders[1]@2 | GroupAggregate[2] -> Sink: revenue[3]@2" {
		t.Fatalf("SQL job %s %q: %s", j.ID, j.Name, vertexNames(j))
	}
	jm := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, jm); err != nil {
		t.Fatal(err)
	}
	if cs := jm.Spec.Template.Spec.Containers; len(cs) != 2 || cs[1].Name != "sql-gateway" {
		t.Fatalf("JobManager containers: %+v", cs)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, svc); err != nil {
		t.Fatal(err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == 8083 {
			t.Errorf("the JobManager Service publishes the SQL Gateway's port")
		}
	}
	np := &networkingv1.NetworkPolicy{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-sql-gateway"}, np); err != nil {
		t.Fatalf("the SQL Gateway's NetworkPolicy: %v", err)
	}

	// An upgrade: the sink's topic changes; the operator IDs stay, the
	// job restores from the upgrade's savepoint.
	setScript(t, ns, name, sqlScript(revenueQuery, "revenue_v2"))
	fc = waitUpgradeResult(t, ns, name, "UpgradeSucceeded", 2*time.Minute)
	old := simJob(t, key, first)
	if old.StopsTriggered != 1 || old.State != flink.JobFinished {
		t.Errorf("old SQL job: %d stops, %s", old.StopsTriggered, old.State)
	}
	upgraded := fc.Status.Job.ID
	nw := simJob(t, key, upgraded)
	if sp := fc.Status.Job.LastSavepoint; sp == nil || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != sp.Path {
		t.Fatalf("upgraded SQL job restored from %+v, last savepoint %+v", nw.RestoredFrom, fc.Status.Job.LastSavepoint)
	}

	// A script that does not parse: refused before any savepoint, the
	// running job untouched.
	setScript(t, ns, name, strings.Replace(sqlScript(revenueQuery, "revenue_v2"), "INSERT INTO revenue SELECT", "INSERT INTO revenue SELEC", 1))
	fc = waitCondition(t, ns, name, v1.ConditionSQLScriptPlanned, metav1.ConditionFalse, time.Minute)
	c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionSQLScriptPlanned)
	if c.Reason != "ScriptRefused" || !strings.Contains(c.Message, "SQL parse failed.") {
		t.Fatalf("SQLScriptPlanned = %+v", c)
	}
	// Wake the operator (a label) and wait until it has looked at the job
	// again: the refusal holds on every reconcile, not only the first.
	// The count is read before the wake: the reconcile it brings may
	// answer before waitRequests would read its baseline.
	before := jobRequests(t, key)
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Labels = map[string]string{"woken": "yes"} })
	eventually(t, time.Minute, "the operator looked at the job again", func() error {
		if n := jobRequests(t, key); n <= before {
			return fmt.Errorf("%d GET /jobs/{jobid}, %d before the wake", n, before)
		}
		return nil
	})
	if j := simJob(t, key, upgraded); j.State != flink.JobRunning || j.StopsTriggered != 0 || j.SavepointsTriggered != 0 {
		t.Fatalf("the running job after a refused script: %s, %d stops, %d savepoints", j.State, j.StopsTriggered, j.SavepointsTriggered)
	}
	if fc := getFC(t, ns, name); fc.Status.Job.ID != upgraded || fc.Status.Upgrade != nil {
		t.Fatalf("a refused script started an upgrade: job %s, upgrade %+v", fc.Status.Job.ID, fc.Status.Upgrade)
	}

	// A script that plans but drops the aggregation (and changes the
	// source's chain): its state cannot be restored without
	// allowNonRestoredState, the new job fails, the operator rolls back.
	setScript(t, ns, name, sqlScript("SELECT shop, amount FROM orders", "revenue_v2"))
	fc = waitCondition(t, ns, name, v1.ConditionRolledBack, metav1.ConditionTrue, 3*time.Minute)
	back := simJob(t, key, fc.Status.Job.ID)
	if back.State != flink.JobRunning || !strings.Contains(vertexNames(back), "GroupAggregate") {
		t.Fatalf("rolled-back SQL job %s: %s", back.State, vertexNames(back))
	}
	if back.RestoredFrom == nil || back.RestoredFrom.ExternalPath == "" {
		t.Fatalf("rolled-back SQL job restored from nothing")
	}

	// Rescale the stable script: parallelism 2 → 3.
	setScript(t, ns, name, sqlScript(revenueQuery, "revenue_v3"))
	waitUpgradeResult(t, ns, name, "UpgradeSucceeded", 2*time.Minute)
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.Job.Parallelism = 3 })
	eventually(t, 2*time.Minute, "rescaled SQL job", func() error {
		fc := getFC(t, ns, name)
		j, ok := findSimJob(key, fc.Status.Job.ID)
		if !ok || j.State != flink.JobRunning || vertexNames(j) != "Source: orders[1]@3 | GroupAggregate[2] -> Sink: revenue[3]@3" {
			return fmt.Errorf("job %s: %s %s", fc.Status.Job.ID, j.State, vertexNames(j))
		}
		return nil
	})

	// The secret is in no ConfigMap, no event and not in the cluster's
	// status.
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(ctx, cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			if strings.Contains(v, sqlSecretValue) {
				t.Errorf("ConfigMap %s key %s holds the secret", cm.Name, k)
			}
		}
	}
	evs := &eventsv1.EventList{}
	if err := k8s.List(ctx, evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Fatal("no events to check")
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Note, sqlSecretValue) {
			t.Errorf("event %s %s holds the secret", e.Reason, e.Name)
		}
	}
	if raw := fmt.Sprintf("%+v", getFC(t, ns, name).Status); strings.Contains(raw, sqlSecretValue) {
		t.Error("the FlinkCluster's status holds the secret")
	}
}

func jobRequests(t *testing.T, key flinksim.ClusterKey) int {
	t.Helper()
	view, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	return view.Requests["GET /jobs/{jobid}"]
}
