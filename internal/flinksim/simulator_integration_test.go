package flinksim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
)

// TestSimulatorAgainstAPIServer runs the simulator against a real
// kube-apiserver and etcd (envtest, binaries from hack/tools in bin/),
// feeding it the objects the operator renders: the ConfigMap and pods made
// from the Deployment's and StatefulSet's templates. Without a kubelet or
// controllers, the test plays them: it creates the pods and marks them
// Ready. The simulator sees no FlinkCluster; it learns everything from the
// pods and the configuration they mount.
func TestSimulatorAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, cfg := testenv.Start(t)
	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sim, err := New(cfg, Options{ListenAddr: "127.0.0.1:0", Engine: EngineOptions{
		InitializationDelay: 50 * time.Millisecond, DeployDelay: 50 * time.Millisecond,
		CheckpointDelay: 50 * time.Millisecond, SavepointDelay: 100 * time.Millisecond, CancelDelay: 50 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})

	const ns, name = "team-a", "demo"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.FlinkClusterSpec{
			Version:          "1.20.1",
			JobManager:       v1.JobManagerSpec{Replicas: 1},
			TaskManager:      v1.TaskManagerSpec{Replicas: 2, Slots: 3},
			HighAvailability: &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes},
			Checkpointing:    &v1.CheckpointingSpec{Interval: "200ms", Retention: 2},
			Storage:          &v1.StorageSpec{ClaimName: "flink-state"},
		},
	}
	desired, err := resources.Build(fc, resources.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	convert(t, desired.ConfigMap, &cm)
	// No FlinkCluster exists here to own it.
	cm.OwnerReferences = nil
	if err := k8s.Create(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	var jmTemplate, tmTemplate corev1.PodTemplateSpec
	convert(t, desired.JobManager.Spec.Template, &jmTemplate)
	convert(t, desired.TaskManager.Spec.Template, &tmTemplate)
	// The Service in front of the JobManagers; the HA account comes later.
	var jmService corev1.Service
	convert(t, desired.JobManagerService, &jmService)
	jmService.OwnerReferences = nil
	if err := k8s.Create(ctx, &jmService); err != nil {
		t.Fatal(err)
	}
	var sa corev1.ServiceAccount
	var binding rbacv1.RoleBinding
	convert(t, desired.HAAccess.ServiceAccount, &sa)
	convert(t, desired.HAAccess.RoleBinding, &binding)
	// The ClusterRole the binding names is the platform's (the chart ships it).
	role := rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: binding.RoleRef.Name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: resources.HAConfigMapVerbs(),
	}}}
	for _, o := range []client.Object{&sa, &role} {
		o.SetOwnerReferences(nil)
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	fl := flink.NewClient(flink.Resolver{Override: sim.BaseURLTemplate()}.BaseURL(ns, name), nil)
	fl.MaxRetries = 0

	// No JobManager pod yet: nothing listens.
	if _, err := fl.Overview(ctx); !flink.IsUnavailable(err) {
		t.Fatalf("before any pod: %v", err)
	}
	mkPod := func(podName string, tmpl corev1.PodTemplateSpec) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		}}}
		if err := k8s.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	deletePod := func(podName string) {
		t.Helper()
		if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName}}, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("demo-jobmanager-0", jmTemplate)
	mkPod("demo-taskmanager-0", tmTemplate)
	mkPod("demo-taskmanager-1", tmTemplate)

	// Without the RoleBinding the account may not use ConfigMaps: the
	// JobManager listens but never leads, and says why.
	key := ClusterKey{Namespace: ns, Name: resources.JobManagerName(fc)}
	eventually(t, "a JobManager refused its leader ConfigMap", func() error {
		v, err := sim.View(key)
		if err != nil {
			return err
		}
		if len(v.JobManagers) != 1 || !strings.Contains(strings.Join(v.JobManagers[0].Log, "\n"), `cannot get resource "configmaps"`) {
			return fmt.Errorf("JobManagers %+v", v.JobManagers)
		}
		return nil
	})
	if _, err := fl.Overview(ctx); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a JobManager without its HA rights answered: %v", err)
	}
	binding.OwnerReferences = nil
	if err := k8s.Create(ctx, &binding); err != nil {
		t.Fatal(err)
	}
	eventually(t, "REST up: the image's version, 2 TaskManagers with the ConfigMap's 3 slots", func() error {
		ov, err := fl.Overview(ctx)
		if err != nil {
			return err
		}
		if ov.FlinkVersion != "1.20.1" || ov.TaskManagers != 2 || ov.SlotsTotal != 6 {
			return fmt.Errorf("overview %+v", ov)
		}
		return nil
	})
	// The cluster was learnt by reading its namespace, and the reads are
	// counted (the bench reports them).
	if rs := sim.ReadStats(); rs.Count == 0 || rs.Total < rs.Longest || rs.Longest <= 0 {
		t.Errorf("ReadStats after observing a cluster = %+v, want reads counted and timed", rs)
	}
	_, jarID, err := fl.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	if err != nil {
		t.Fatal(err)
	}
	jobID, err := fl.RunJar(ctx, jarID, flink.JarRunRequest{Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	var latest string
	eventually(t, "checkpoints every 200ms, as spec.checkpointing renders, on the shared claim", func() error {
		cp, err := fl.Checkpoints(ctx, jobID)
		if err != nil {
			return err
		}
		if cp.Counts.Completed < 2 || !strings.HasPrefix(cp.Latest.Completed.ExternalPath, "file:/flink-shared/team-a/demo/checkpoints/"+jobID+"/chk-") {
			return fmt.Errorf("checkpoints %+v", cp.Counts)
		}
		latest = cp.Latest.Completed.ExternalPath
		return nil
	})

	// The JobManager pod is replaced: with Kubernetes HA on the shared
	// claim the new JobManager recovers the job from a checkpoint.
	deletePod("demo-jobmanager-0")
	eventually(t, "nothing listening without a JobManager pod", func() error {
		if _, err := fl.Overview(ctx); !flink.IsUnavailable(err) {
			return fmt.Errorf("overview: %v", err)
		}
		return nil
	})
	mkPod("demo-jobmanager-1", jmTemplate)
	eventually(t, "the job recovered and running", func() error {
		j, err := fl.Job(ctx, jobID)
		if err != nil {
			return err
		}
		cp, err := fl.Checkpoints(ctx, jobID)
		if err != nil {
			return err
		}
		if j.State != flink.JobRunning || cp.Latest.Restored == nil || !strings.Contains(cp.Latest.Restored.ExternalPath, "/chk-") {
			return fmt.Errorf("job %s restored %+v (latest before: %s)", j.State, cp.Latest.Restored, latest)
		}
		return nil
	})

	// A configuration change reaches only processes that start after it:
	// a ConfigMap without any memory option leaves the running JobManager
	// alone, and the next one refuses to start.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(&cm), &cm); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(cm.Data["config.yaml"], "\n") {
		if !strings.HasPrefix(l, "jobmanager.memory.") {
			kept = append(kept, l)
		}
	}
	cm.Data["config.yaml"] = strings.Join(kept, "\n")
	if err := k8s.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := fl.Overview(ctx); err != nil {
		t.Fatalf("the running JobManager read the new ConfigMap: %v", err)
	}
	deletePod("demo-jobmanager-1")
	mkPod("demo-jobmanager-2", jmTemplate)
	eventually(t, "the new JobManager refusing to start", func() error {
		v, err := sim.View(key)
		if err != nil {
			return err
		}
		for _, p := range v.JobManagers {
			if p.Pod == "demo-jobmanager-2" && strings.Contains(p.Down, "JobManager memory configuration failed") {
				return nil
			}
		}
		return fmt.Errorf("JobManagers %+v", v.JobManagers)
	})
	if _, err := fl.Overview(ctx); !flink.IsUnavailable(err) {
		t.Errorf("a JobManager that refused to start answered: %v", err)
	}
}

// convert turns an apply configuration into the typed object it describes.
func convert(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
