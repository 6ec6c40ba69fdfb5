package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/platform"
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
	jm := &appsv1.StatefulSet{}
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
	// The refusal holds on every reconcile, not only the first.
	wakeAndWaitForJobPoll(t, ns, name)
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

// wakeAndWaitForJobPoll wakes the operator (a label) and waits until it
// has looked at the cluster's job again. The count is read before the
// wake: the reconcile it brings may answer before waitRequests would read
// its baseline.
func wakeAndWaitForJobPoll(t *testing.T, ns, name string) {
	t.Helper()
	key := simKey(ns, name)
	before := requests(t, key, "GET /jobs/{jobid}")
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Labels = map[string]string{"woken": "yes"} })
	waitRequestsSince(t, key, "GET /jobs/{jobid}", before, 1)
}

// TestSQLTour runs the README tour's SQL step as written, on the
// example's own files: each command of its shell block, from the project
// root, in a namespace of the test's own (the kubeconfig's context), the
// example's timers scaled down. Applied, running; a changed query upgraded
// through a savepoint it restores from; a script that does not parse
// refused while the job runs on.
func TestSQLTour(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	const name = "revenue"
	key := simKey(ns, name)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	raw, err := os.ReadFile(plat.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	tourShell(t, kubeconfig, "bin/kubectl config set-context --current --namespace="+ns)
	manifest := scaledSQLExample(t)

	var first, upgraded, last string
	for _, cmd := range tourStep(t, "A SQL job").Commands() {
		const apply = "bin/kubectl apply -f examples/sql-job.yaml"
		if strings.Contains(cmd, apply) {
			cmd = strings.Replace(cmd, apply, "bin/kubectl apply -f "+manifest, 1)
		}
		last = tourShell(t, kubeconfig, cmd)
		switch {
		case strings.Contains(cmd, "=RUNNING fc/revenue"):
			first = getFC(t, ns, name).Status.Job.ID
			if j := simJob(t, key, first); j.Name != "revenue-per-shop" || j.State != flink.JobRunning {
				t.Fatalf("the example's job %s %q: %s", j.ID, j.Name, j.State)
			}
		case strings.Contains(cmd, "--for=condition=Upgrading=false"):
			fc := getFC(t, ns, name)
			if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionUpgrading); c == nil || c.Reason != "UpgradeSucceeded" {
				t.Fatalf("the changed query's upgrade: %+v", c)
			}
			deployed := &v1.FlinkClusterSpec{}
			if err := json.Unmarshal(fc.Status.DeployedSpec.Raw, deployed); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(deployed.Job.SQL.Script, "amount > 0 AND shop <> 'demo'") {
				t.Fatalf("deployed script:\n%s", deployed.Job.SQL.Script)
			}
			if old := simJob(t, key, first); old.StopsTriggered != 1 || old.State != flink.JobFinished {
				t.Errorf("the example's first job: %d stops, %s", old.StopsTriggered, old.State)
			}
			upgraded = fc.Status.Job.ID
			nw := simJob(t, key, upgraded)
			if sp := fc.Status.Job.LastSavepoint; upgraded == first || sp == nil || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != sp.Path {
				t.Fatalf("upgraded job %s restored from %+v, last savepoint %+v", upgraded, nw.RestoredFrom, sp)
			}
		case strings.Contains(cmd, "{.status.job.restoredFrom}"):
			if sp := getFC(t, ns, name).Status.Job.LastSavepoint; last != sp.Path {
				t.Errorf("the tour prints restoredFrom %q, the savepoint is %s", last, sp.Path)
			}
		}
	}
	if first == "" || upgraded == "" {
		t.Fatalf("the tour's SQL step no longer waits for the job (%q) or its upgrade (%q)", first, upgraded)
	}

	// The broken script: what the tour prints last, the condition, the
	// event, and the running job untouched on later reconciles too.
	if !strings.HasPrefix(last, "RUNNING: Flink refused the new SQL script; the running job keeps running: ") || !strings.Contains(last, "SQL parse failed.") {
		t.Fatalf("the tour's last command printed %q", last)
	}
	fc := getFC(t, ns, name)
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionSQLScriptPlanned); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ScriptRefused" {
		t.Fatalf("SQLScriptPlanned = %+v", c)
	}
	eventually(t, 30*time.Second, "a SQLScriptRefused event", func() error { return hasEvent(t, ns, "SQLScriptRefused") })
	wakeAndWaitForJobPoll(t, ns, name)
	if j := simJob(t, key, upgraded); j.State != flink.JobRunning || j.StopsTriggered != 0 || j.SavepointsTriggered != 0 {
		t.Fatalf("the running job after the broken script: %s, %d stops, %d savepoints", j.State, j.StopsTriggered, j.SavepointsTriggered)
	}
	if fc := getFC(t, ns, name); fc.Status.Job.ID != upgraded || fc.Status.Upgrade != nil {
		t.Fatalf("the broken script started an upgrade: job %s, upgrade %+v", fc.Status.Job.ID, fc.Status.Upgrade)
	}
}

// tourStep is the step of the README's tour whose title starts so.
func tourStep(t *testing.T, title string) platform.TourStep {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range platform.Tour(string(raw)) {
		if strings.HasPrefix(s.Title, title) {
			return s
		}
	}
	t.Fatalf("the README's tour has no step %q", title)
	return platform.TourStep{}
}

// tourShell runs one of the tour's commands as a reader would: sh, in
// the project root, with KUBECONFIG set; it returns what it printed.
func tourShell(t *testing.T, kubeconfig, cmd string) string {
	t.Helper()
	c := exec.Command("sh", "-c", cmd)
	c.Dir, c.Env = root, append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("%s: %v\n%s%s", cmd, err, out.String(), errOut.String())
	}
	return out.String()
}

// scaledSQLExample is examples/sql-job.yaml with its timers scaled down
// (checkpoints each second, shorter upgrade timeouts), in a file.
func scaledSQLExample(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "examples", "sql-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		t.Fatal(err)
	}
	fc.Spec.Checkpointing.Interval = "1s"
	fc.Spec.UpgradePolicy.StabilityTimeout, fc.Spec.UpgradePolicy.SavepointTimeout = "30s", "20s"
	out, err := yaml.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sql-job.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
