package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

var nsCounter int

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("it-%d-%d", time.Now().UnixNano()%100000, nsCounter)}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// referenceExample is examples/realtime-warehouse.yaml, unchanged, as
// unstructured so nothing in our Go types can paper over the YAML.
func referenceExample(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	return example(t, ns, "realtime-warehouse.yaml")
}

func getCluster(t *testing.T, ns, name string) *v1.FlinkCluster {
	t.Helper()
	fc := &v1.FlinkCluster{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	return fc
}

// markReady plays the workload controllers' part, which envtest does not
// run: it reports every desired pod as created, updated and ready.
func markReady(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	testwait.Until(t, 10*time.Second, func() error {
		d := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.StatefulSetStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n, CurrentRevision: "r1", UpdateRevision: "r1"}
		if err := k8s.Status().Update(ctx, d); err != nil {
			return err
		}
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, s); err != nil {
			return err
		}
		m := *s.Spec.Replicas
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: m, ReadyReplicas: m, UpdatedReplicas: m,
			AvailableReplicas: m, CurrentRevision: "r1", UpdateRevision: "r1"}
		return k8s.Status().Update(ctx, s)
	})
}

func waitCondition(t *testing.T, ns, name, condType string, want metav1.ConditionStatus) *v1.FlinkCluster {
	t.Helper()
	var fc *v1.FlinkCluster
	testwait.Until(t, 15*time.Second, func() error {
		fc = getCluster(t, ns, name)
		c := meta.FindStatusCondition(fc.Status.Conditions, condType)
		if c == nil || c.Status != want || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("condition %s = %+v, want %s at generation %d", condType, c, want, fc.Generation)
		}
		return nil
	})
	return fc
}

func TestReferenceExampleIsAcceptedAndConverges(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatalf("the reference example was rejected: %v", err)
	}

	// The children appear, shaped as the builders say, owned by the cluster.
	fc := getCluster(t, ns, "realtime-warehouse")
	cm := &corev1.ConfigMap{}
	testwait.Until(t, 10*time.Second, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-config"}, cm)
	})
	conf := cm.Data["flink-conf.yaml"]
	for _, line := range []string{"execution.checkpointing.interval: 30s", "taskmanager.numberOfTaskSlots: 4", "high-availability.zookeeper.quorum: zookeeper:2181", "state.checkpoints.num-retained: 3"} {
		if !strings.Contains(conf, line+"\n") {
			t.Errorf("flink-conf.yaml lacks %q:\n%s", line, conf)
		}
	}
	children := []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "realtime-warehouse-jobmanager"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "realtime-warehouse-jobmanager"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "realtime-warehouse-taskmanager"}},
		cm,
	}
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "realtime-warehouse-taskmanager"}}
	for _, obj := range children {
		testwait.Until(t, 10*time.Second, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj)
		})
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != fc.UID {
			t.Errorf("%T %s has controller %v, want the FlinkCluster", obj, obj.GetName(), ref)
		}
		for _, k := range []string{resources.LabelName, resources.LabelInstance, resources.LabelComponent, resources.LabelManagedBy} {
			if obj.GetLabels()[k] == "" {
				t.Errorf("%T %s lacks label %s", obj, obj.GetName(), k)
			}
		}
	}
	jm := children[0].(*appsv1.StatefulSet)
	if *jm.Spec.Replicas != 3 || jm.Spec.Template.Spec.Containers[0].Image != "flink:1.17.1" || jm.Spec.Template.Spec.Containers[0].Args[0] != "jobmanager" {
		t.Errorf("JobManager: replicas %d, image %s, args %v", *jm.Spec.Replicas, jm.Spec.Template.Spec.Containers[0].Image, jm.Spec.Template.Spec.Containers[0].Args)
	}
	svcPorts := map[string]int32{}
	for _, p := range children[1].(*corev1.Service).Spec.Ports {
		svcPorts[p.Name] = p.Port
	}
	if svcPorts["rpc"] != 6123 || svcPorts["blob"] != 6124 || svcPorts["rest"] != 8081 {
		t.Errorf("JobManager Service ports = %v", svcPorts)
	}
	tm := children[2].(*appsv1.StatefulSet)
	if *tm.Spec.Replicas != 12 || tm.Spec.Template.Spec.Containers[0].Args[0] != "taskmanager" {
		t.Errorf("TaskManagers: replicas %d, args %v", *tm.Spec.Replicas, tm.Spec.Template.Spec.Containers[0].Args)
	}
	if tm.Spec.ServiceName != "realtime-warehouse-taskmanager" {
		t.Errorf("TaskManagers' serviceName %q (immutable: StatefulSets created with it keep it)", tm.Spec.ServiceName)
	}
	// Before pods are ready: Progressing, not Available.
	fc = waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionFalse)
	if p := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionProgressing); p == nil || p.Status != metav1.ConditionTrue {
		t.Errorf("Progressing = %+v before pods are ready", p)
	}

	// A session cluster's budget waits for Flink to count a job on it
	// (nothing runs before for it to protect; the e2e tier, with Flink's
	// simulator, shows it come): envtest has no Flink, so none comes,
	// neither while the pods come up nor once every pod is ready and the
	// reconciles that followed have ended.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: budget.Name}, budget); !apierrors.IsNotFound(err) {
		t.Errorf("TaskManagers' budget before the cluster was Available: %v, want none", err)
	}
	markReady(t, ns, "realtime-warehouse")
	fc = waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionTrue)
	waitReconciled(t, time.Now())
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: budget.Name}, budget); !apierrors.IsNotFound(err) {
		t.Errorf("TaskManagers' budget of a session cluster running nothing: %v, want none", err)
	}
	if fc.Status.Phase != v1.PhaseRunning || fc.Status.TaskManager.Ready != "12/12" || fc.Status.JobManager.Ready != "3/3" {
		t.Errorf("status = phase %s, TM %s, JM %s", fc.Status.Phase, fc.Status.TaskManager.Ready, fc.Status.JobManager.Ready)
	}
	if p := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionProgressing); p.Status != metav1.ConditionFalse {
		t.Errorf("Progressing = %+v after convergence", p)
	}
	if d := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v", d)
	}
	if fc.Status.Selector == "" || fc.Status.ObservedGeneration != fc.Generation {
		t.Errorf("selector %q, observedGeneration %d of %d", fc.Status.Selector, fc.Status.ObservedGeneration, fc.Generation)
	}
	// Converged, and no Service for the TaskManagers: nothing dials them
	// by name.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("TaskManager Service: %v, want none", err)
	}
	// Nothing outlives the owner references (no volume claims), so no
	// finalizer: the write it would cost buys nothing.
	if controllerHasFinalizer(fc) {
		t.Errorf("finalizers = %v on a cluster without claims", fc.Finalizers)
	}
}

func controllerHasFinalizer(fc *v1.FlinkCluster) bool {
	for _, f := range fc.Finalizers {
		if f == controller.Finalizer {
			return true
		}
	}
	return false
}

// TestBadInputsAreRejectedAtAdmission sends each bad spec to the API server
// and expects a rejection whose message names the offending field.
func TestBadInputsAreRejectedAtAdmission(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name     string
		mutate   func(spec map[string]any)
		wantText string
	}{
		{"zero slots", func(s map[string]any) { sub(s, "taskManager")["slots"] = 0 }, "spec.taskManager.slots"},
		{"33 slots", func(s map[string]any) { sub(s, "taskManager")["slots"] = 33 }, "spec.taskManager.slots"},
		{"fuzzy version latest", func(s map[string]any) { s["version"] = "latest" }, "spec.version"},
		{"fuzzy version 1.17", func(s map[string]any) { s["version"] = "1.17" }, "spec.version"},
		{"missing version", func(s map[string]any) { delete(s, "version") }, "spec.version"},
		{"interval thirty", func(s map[string]any) { sub(s, "checkpointing")["interval"] = "thirty" }, "spec.checkpointing.interval"},
		{"interval too short", func(s map[string]any) { sub(s, "checkpointing")["interval"] = "1ms" }, "spec.checkpointing.interval"},
		{"retention zero", func(s map[string]any) { sub(s, "checkpointing")["retention"] = 0 }, "spec.checkpointing.retention"},
		{"three JobManagers without HA", func(s map[string]any) { delete(s, "highAvailability") }, "spec.jobManager.replicas"},
		{"three JobManagers with HA none", func(s map[string]any) { s["highAvailability"] = map[string]any{"mode": "none"} }, "spec.jobManager.replicas"},
		{"zookeeper without connectString", func(s map[string]any) { s["highAvailability"] = map[string]any{"mode": "zookeeper"} }, "spec.highAvailability.zookeeper.connectString"},
		{"unknown HA mode", func(s map[string]any) { sub(s, "highAvailability")["mode"] = "etcd" }, "spec.highAvailability.mode"},
		{"negative TaskManagers", func(s map[string]any) { sub(s, "taskManager")["replicas"] = -1 }, "spec.taskManager.replicas"},
		{"zero JobManagers", func(s map[string]any) { sub(s, "jobManager")["replicas"] = 0 }, "spec.jobManager.replicas"},
		{"operator-owned config key", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"taskmanager.numberOfTaskSlots": "8"}
		}, "spec.flinkConfiguration"},
		{"HA key in flinkConfiguration", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"high-availability.storageDir": "s3://x"}
		}, "spec.flinkConfiguration"},
		{"TLS without secret", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrap": map[string]any{"servers": "k:9093"}, "tls": map[string]any{"enabled": true}}
		}, "spec.kafka.tls.secretRef"},
		{"inline kafka password", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrap": map[string]any{"servers": "k:9093"}, "sasl": map[string]any{"password": "hunter2"}}
		}, "spec.kafka.sasl"},
		{"last-state without checkpointing", func(s map[string]any) {
			delete(s, "checkpointing")
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "upgradeMode": "last-state"}
		}, "spec.job.upgradeMode"},
		{"job without checkpointing", func(s map[string]any) {
			delete(s, "checkpointing")
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
		}, "spec.job requires spec.checkpointing"},
		{"job jar not http", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "local:///opt/flink/job.jar"}
		}, "spec.job.jarURI"},
		{"job with neither jar nor sql", func(s map[string]any) {
			s["job"] = map[string]any{"parallelism": 2}
		}, "spec.job needs exactly one of jarURI and sql"},
		{"job with both jar and sql", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "sql": map[string]any{"script": "INSERT INTO a SELECT * FROM b"}}
		}, "spec.job needs exactly one of jarURI and sql"},
		{"sql with neither script nor configMapRef", func(s map[string]any) {
			s["job"] = map[string]any{"sql": map[string]any{}}
		}, "spec.job.sql needs exactly one of script and configMapRef"},
		{"sql with both script and configMapRef", func(s map[string]any) {
			s["job"] = map[string]any{"sql": map[string]any{"script": "INSERT INTO a SELECT * FROM b", "configMapRef": map[string]any{"name": "sql", "key": "job.sql"}}}
		}, "spec.job.sql needs exactly one of script and configMapRef"},
		{"sql with a jar's entry class", func(s map[string]any) {
			s["job"] = map[string]any{"entryClass": "org.example.Main", "sql": map[string]any{"script": "INSERT INTO a SELECT * FROM b"}}
		}, "spec.job.entryClass and spec.job.args belong to a jar job"},
		{"sql configMapRef without key", func(s map[string]any) {
			s["job"] = map[string]any{"sql": map[string]any{"configMapRef": map[string]any{"name": "sql"}}}
		}, "spec.job.sql.configMapRef.key"},
		{"sql secret placeholder with a brace", func(s map[string]any) {
			s["job"] = map[string]any{"sql": map[string]any{"script": "INSERT INTO a SELECT * FROM b",
				"secretRefs": []any{map[string]any{"placeholder": "pw}", "secretKeyRef": map[string]any{"name": "kafka", "key": "password"}}}}}
		}, "spec.job.sql.secretRefs[0].placeholder"},
		{"sql secret placeholder twice", func(s map[string]any) {
			ref := map[string]any{"placeholder": "PW", "secretKeyRef": map[string]any{"name": "kafka", "key": "password"}}
			s["job"] = map[string]any{"sql": map[string]any{"script": "INSERT INTO a SELECT * FROM b", "secretRefs": []any{ref, ref}}}
		}, "spec.job.sql.secretRefs[1]"},
		{"old v1alpha1 field shape", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrapServers": "k:9093"}
		}, "spec.kafka"},
		{"unsupported minor 1.16", func(s map[string]any) { s["version"] = "1.16.3" }, "spec.version must be a release of a Flink minor Datapilot supports: 1.17 to 2.2"},
		{"unsupported minor 2.3", func(s map[string]any) { s["version"] = "2.3.0" }, "spec.version must be a release of a Flink minor Datapilot supports"},
		{"owned key missed by the old list", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"taskmanager.memory.process.size": "4g"}
		}, "spec.flinkConfiguration must not set taskmanager.memory.process.size"},
		{"deprecated alias of an owned key", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"recovery.mode": "zookeeper"}
		}, "spec.flinkConfiguration must not set recovery.mode"},
		{"newline injecting an owned key", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"pipeline.name": "x\njobmanager.rpc.address: evil"}
		}, "spec.flinkConfiguration values must be one line without control characters (a newline would inject lines into the configuration file); refused: pipeline.name"},
		{"# in flink-conf.yaml", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"pipeline.name": "orders #1"}
		}, "spec.flinkConfiguration: Flink 1.17.1 reads flink-conf.yaml, which cannot carry an empty value, a value with #, or one that starts or ends with a space; refused: pipeline.name"},
		{"empty value in flink-conf.yaml", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"pipeline.name": ""}
		}, "refused: pipeline.name"},
		{"trailing space in flink-conf.yaml", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"pipeline.name": "orders "}
		}, "refused: pipeline.name"},
		{"key that is no option name", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"pipeline name": "x"}
		}, "spec.flinkConfiguration keys are dotted Flink option names"},
		{"retention key with last-state", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "upgradeMode": "last-state"}
			s["flinkConfiguration"] = map[string]any{"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"}
		}, "spec.flinkConfiguration must not set execution.checkpointing.externalized-checkpoint-retention: it decides which savepoint or checkpoint the job restores from"},
		{"retention key without a job", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
		}, "spec.flinkConfiguration must not set execution.checkpointing.externalized-checkpoint-retention: "},
		{"claim mode CLAIM", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.savepoint-restore-mode": "CLAIM"}
		}, "spec.flinkConfiguration must not set execution.savepoint-restore-mode: it decides which savepoint or checkpoint the job restores from, or lets Flink delete one the operator recorded to restore or roll back from; the operator sets it (the claim mode is always NO_CLAIM)"},
		{"2.x claim mode", func(s map[string]any) {
			s["version"] = "2.0.1"
			s["flinkConfiguration"] = map[string]any{"execution.state-recovery.claim-mode": "CLAIM"}
		}, "spec.flinkConfiguration must not set execution.state-recovery.claim-mode: "},
		{"restore path", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.savepoint.path": "s3://b/savepoint-1"}
		}, "spec.flinkConfiguration must not set execution.savepoint.path: "},
		{"2.x restore path", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.state-recovery.path": "s3://b/savepoint-1"}
		}, "spec.flinkConfiguration must not set execution.state-recovery.path: "},
		{"ignore unclaimed state", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.savepoint.ignore-unclaimed-state": "true"}
		}, "use spec.job.initialSavepointPath and spec.job.allowNonRestoredState"},
		{"2.x ignore unclaimed state", func(s map[string]any) {
			s["flinkConfiguration"] = map[string]any{"execution.state-recovery.ignore-unclaimed-state": "true"}
		}, "spec.flinkConfiguration must not set execution.state-recovery.ignore-unclaimed-state: "},
		{"storage with uri and claim", func(s map[string]any) {
			s["storage"] = map[string]any{"uri": "s3://b/f", "claimName": "state"}
		}, "spec.storage needs exactly one of uri and claimName"},
		{"storage on a pod's disk", func(s map[string]any) {
			s["storage"] = map[string]any{"uri": "file:///flink-data"}
		}, "spec.storage.uri must be shared storage"},
		{"checkpoints dir without a scheme", func(s map[string]any) {
			sub(s, "checkpointing")["checkpointsDir"] = "/data/checkpoints"
		}, "spec.checkpointing.checkpointsDir"},
		{"autoscaler on a session cluster", func(s map[string]any) {
			s["autoscaler"] = map[string]any{"mode": "apply"}
		}, "spec.autoscaler requires spec.job"},
		{"autoscaler applying to a stateless job", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "upgradeMode": "stateless"}
			s["autoscaler"] = map[string]any{"mode": "apply"}
		}, "would restart it without its state"},
		{"vertex parallelism for no vertex ID", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "vertexParallelism": []any{map[string]any{"id": "Source: orders", "parallelism": 2}}}
		}, "spec.job.vertexParallelism[0].id"},
		{"vertex parallelism below one", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "vertexParallelism": []any{map[string]any{"id": "0123456789abcdef0123456789abcdef", "parallelism": 0}}}
		}, "spec.job.vertexParallelism[0].parallelism"},
		{"vertex parallelism twice for one vertex", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "vertexParallelism": []any{
				map[string]any{"id": "0123456789abcdef0123456789abcdef", "parallelism": 2}, map[string]any{"id": "0123456789abcdef0123456789abcdef", "parallelism": 3}}}
		}, "Duplicate value"},
		{"vertex parallelism on Flink 1.18.0", func(s map[string]any) {
			s["version"] = "1.18.0"
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "vertexParallelism": []any{map[string]any{"id": "0123456789abcdef0123456789abcdef", "parallelism": 2}}}
		}, "spec.job.vertexParallelism: Flink 1.18.0 runs no vertex at a parallelism of its own"},
		{"vertex parallelism on Flink 1.17", func(s map[string]any) {
			s["version"] = "1.17.2"
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar", "vertexParallelism": []any{map[string]any{"id": "0123456789abcdef0123456789abcdef", "parallelism": 2}}}
		}, "FLINK-33534"},
		{"autoscaler bounds crossed", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["autoscaler"] = map[string]any{"minParallelism": 8, "maxParallelism": 4}
		}, "spec.autoscaler.minParallelism must not exceed spec.autoscaler.maxParallelism"},
		{"autoscaler minimum beyond its TaskManagers", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["autoscaler"] = map[string]any{"minParallelism": 20, "maxTaskManagers": 4}
		}, "spec.autoscaler.minParallelism needs more slots"},
		{"autoscaler window of two samples", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["autoscaler"] = map[string]any{"interval": "30s", "metricWindow": "1m"}
		}, "spec.autoscaler.metricWindow must hold at least three samples"},
		{"autoscaler target out of range", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["autoscaler"] = map[string]any{"targetUtilizationPercent": 100}
		}, "spec.autoscaler.targetUtilizationPercent"},
		{"autoscaler unknown mode", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["autoscaler"] = map[string]any{"mode": "auto"}
		}, "spec.autoscaler.mode"},
		{"healing on a session cluster", func(s map[string]any) {
			s["healing"] = map[string]any{"restoreAttempts": 2}
		}, "spec.healing requires spec.job"},
		{"healing with an unknown action", func(s map[string]any) {
			s["job"] = map[string]any{"jarURI": "https://artifacts/job.jar"}
			s["healing"] = map[string]any{"onRestartLoop": "delete"}
		}, "spec.healing.onRestartLoop"},
		{"three JobManagers without HA and no taskManager block", func(s map[string]any) {
			delete(s, "highAvailability")
			delete(s, "taskManager")
		}, "spec.jobManager.replicas greater than 1 requires spec.highAvailability.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := referenceExample(t, ns)
			u.SetName("bad-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"))
			spec := u.Object["spec"].(map[string]any)
			tc.mutate(spec)
			// Strict field validation: unknown fields are errors, not
			// silently dropped, so a typo cannot lose a setting.
			err := k8s.Create(context.Background(), u, client.FieldValidation(metav1.FieldValidationStrict))
			if err == nil {
				_ = k8s.Delete(context.Background(), u)
				t.Fatalf("the API server accepted %s", tc.name)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("want a validation error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error does not name %s: %v", tc.wantText, err)
			}
		})
	}
}

func sub(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

// TestScaleChangesReplicasOnly scales through the scale subresource, as
// kubectl scale and a HorizontalPodAutoscaler do, and checks that only the
// replica count moved: the pod template, and so the revision, is untouched.
func TestScaleChangesReplicasOnly(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	markReady(t, ns, "realtime-warehouse")
	waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionTrue)
	before := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}, before); err != nil {
		t.Fatal(err)
	}

	fc := getCluster(t, ns, "realtime-warehouse")
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(ctx, fc, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 12 || scale.Status.Replicas != 12 || scale.Status.Selector == "" {
		t.Fatalf("scale subresource = %+v, want 12 replicas and a selector", scale)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":15}}`))
	if err := k8s.SubResource("scale").Patch(ctx, fc, patch); err != nil {
		t.Fatalf("patch scale: %v", err)
	}

	after := &appsv1.StatefulSet{}
	testwait.Until(t, 10*time.Second, func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}, after); err != nil {
			return err
		}
		if *after.Spec.Replicas != 15 {
			return fmt.Errorf("replicas %d", *after.Spec.Replicas)
		}
		return nil
	})
	if !equalTemplates(before, after) {
		t.Error("scaling changed the TaskManager pod template: it would create a new revision")
	}
	fc = waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionFalse)
	if fc.Status.Phase != v1.PhaseScaling {
		t.Errorf("phase while scaling = %s, want Scaling", fc.Status.Phase)
	}
	markReady(t, ns, "realtime-warehouse")
	fc = waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionTrue)
	if fc.Status.TaskManager.Ready != "15/15" {
		t.Errorf("TaskManagers ready = %s, want 15/15", fc.Status.TaskManager.Ready)
	}
}

// TestConfigChangeRollsPods checks that a configuration change reaches the
// ConfigMap and changes the pod template's config hash, which rolls the pods.
func TestConfigChangeRollsPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}
	before := &appsv1.StatefulSet{}
	testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, key, before) })

	fc := getCluster(t, ns, "realtime-warehouse")
	base := fc.DeepCopy()
	fc.Spec.Checkpointing.Interval = "1m"
	if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	after := &appsv1.StatefulSet{}
	testwait.Until(t, 10*time.Second, func() error {
		if err := k8s.Get(ctx, key, after); err != nil {
			return err
		}
		if after.Spec.Template.Annotations[resources.AnnotationConfigHash] == before.Spec.Template.Annotations[resources.AnnotationConfigHash] {
			return errors.New("config hash unchanged")
		}
		return nil
	})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-config"}, cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["flink-conf.yaml"], "execution.checkpointing.interval: 1m\n") {
		t.Errorf("ConfigMap not updated:\n%s", cm.Data["flink-conf.yaml"])
	}
	if *after.Spec.Replicas != *before.Spec.Replicas {
		t.Error("a configuration change changed the replica count")
	}
}

// TestDeletionCleansUpClaims deletes a cluster whose TaskManagers left
// claims behind, with one claim already gone, and expects the object to go.
func TestDeletionCleansUpClaims(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := referenceExample(t, ns)
	spec := u.Object["spec"].(map[string]any)
	sub(spec, "taskManager")["storage"] = map[string]any{"size": "1Gi"}
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() error {
		if fc := getCluster(t, ns, "realtime-warehouse"); !controllerHasFinalizer(fc) {
			return errors.New("no finalizer yet")
		}
		return nil
	})
	// Claims as the StatefulSet controller would create them.
	for i := range 3 {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-realtime-warehouse-taskmanager-%d", i), Namespace: ns,
				Labels: resources.SelectorLabels("realtime-warehouse", resources.ComponentTaskManager)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := k8s.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	// An unrelated claim must survive.
	other := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-realtime-warehouse-taskmanager-1", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}

	if err := k8s.Delete(ctx, getCluster(t, ns, "realtime-warehouse")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse"}, &v1.FlinkCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := k8s.List(ctx, pvcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// envtest runs no PVC-protection controller, so deleted claims vanish.
	var names []string
	for _, p := range pvcs.Items {
		if p.DeletionTimestamp.IsZero() {
			names = append(names, p.Name)
		}
	}
	if len(names) != 1 || names[0] != "unrelated" {
		t.Errorf("claims left = %v, want only unrelated", names)
	}
}

// TestConvergedClusterCostsZeroWrites triggers reconciles of a converged
// cluster, through the cluster itself and through its children, and counts
// the operator's write requests.
func TestConvergedClusterCostsZeroWrites(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	markReady(t, ns, "realtime-warehouse")
	waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionTrue)
	// Let in-flight reconciles and event writes settle.
	start := settledWrites(t, ns)
	reconciles := reconcileCount(t)

	// An annotation on the cluster and a status touch on each workload each
	// wake the controller; none of them changes what it should do.
	fc := getCluster(t, ns, "realtime-warehouse")
	base := fc.DeepCopy()
	fc.Annotations = map[string]string{"touched": "1"}
	if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"realtime-warehouse-jobmanager", "realtime-warehouse-taskmanager"} {
		for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}} {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err == nil {
				base := obj.DeepCopyObject().(client.Object)
				obj.SetLabels(mergeMap(obj.GetLabels(), map[string]string{"touched": "1"}))
				if err := k8s.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The cluster's touch is reconciled at once; the workloads' are mere
	// progress, which waits ProgressDelay and shares one reconcile
	// (childHandler). So: at least two reconciles of the controller, and
	// every reconcile due by then has run.
	waitReconciled(t, time.Now().Add(controller.DefaultProgressDelay))
	if n := reconcileCount(t); n < reconciles+2 {
		t.Fatalf("%v reconciles since the touch, want at least 2", n-reconciles)
	}
	if got := settledWrites(t, ns) - start; got != 0 {
		t.Errorf("a converged cluster cost %d writes, want 0", got)
	}
}

func mergeMap(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func equalTemplates(a, b *appsv1.StatefulSet) bool {
	return equality.Semantic.DeepEqual(a.Spec.Template, b.Spec.Template)
}

// waitReconciled waits until every reconcile due by due has run: after
// due (plus a second for the watch to deliver), controller-runtime's queue
// holds no ready request and no worker is busy. The view is the whole
// controller's, so other tests' clusters can only make it wait longer.
// Counting reconciles instead raced: the workqueue merges a cluster's
// requests, and the count also moves with other tests' clusters.
func waitReconciled(t *testing.T, due time.Time) {
	t.Helper()
	due = due.Add(time.Second)
	testwait.Until(t, 30*time.Second, func() error {
		if time.Now().Before(due) {
			return errors.New("reconciles not due yet")
		}
		if depth, active := controllerGauge(t, "workqueue_depth", "name"), controllerGauge(t, "controller_runtime_active_workers", "controller"); depth > 0 || active > 0 {
			return fmt.Errorf("%v requests queued, %v reconciles running", depth, active)
		}
		return nil
	})
}

// controllerGauge sums gauge family name over the flinkcluster controller's
// series (label names the controller).
func controllerGauge(t *testing.T, name, label string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	seen := false
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == "flinkcluster" {
					n += m.GetGauge().GetValue()
					seen = true
				}
			}
		}
	}
	if !seen {
		// A renamed metric would make every wait on it pass at once.
		t.Fatalf("controller-runtime exports no %s{%s=\"flinkcluster\"}", name, label)
	}
	return n
}

// reconcileCount reads controller-runtime's own reconcile counter.
func reconcileCount(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "flinkcluster" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
