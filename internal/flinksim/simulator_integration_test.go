package flinksim

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// kube-apiserver and etcd (envtest, binaries from hack/tools in bin/).
// Without a kubelet, the test plays one: it creates the Flink pods and
// marks them Ready.
func TestSimulatorAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, cfg := testenv.Start(t)

	scheme := k8sruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	sim, err := New(cfg, Options{ListenAddr: "127.0.0.1:0", Engine: EngineOptions{
		CheckpointInterval: 200 * time.Millisecond, SavepointDelay: 100 * time.Millisecond, RestartDelay: 300 * time.Millisecond,
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
	if !strings.HasPrefix(sim.BaseURLTemplate(), "http://127.0.0.1:") {
		t.Errorf("BaseURLTemplate = %s", sim.BaseURLTemplate())
	}

	const ns, name = "team-a", "demo"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.FlinkClusterSpec{
			Version:     "1.18.1",
			JobManager:  v1.JobManagerSpec{Replicas: 1},
			TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		},
	}
	if err := k8s.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	fl := flink.NewClient(flink.Resolver{Override: sim.BaseURLTemplate()}.BaseURL(ns, name), nil)
	fl.MaxRetries = 0

	// No JobManager pod yet: the REST API is down.
	if _, err := fl.Overview(ctx); !flink.IsUnavailable(err) {
		t.Fatalf("before any pod: %v", err)
	}

	mkPod := func(podName, component string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, Labels: resources.Labels(fc, component)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: component, Image: "flink:1.18.1-java11"}}},
		}
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
	mkPod("demo-jobmanager-0", resources.ComponentJobManager)
	mkPod("demo-taskmanager-0", resources.ComponentTaskManager)
	mkPod("demo-taskmanager-1", resources.ComponentTaskManager)

	eventually(t, "REST up with 2 TaskManagers x 2 slots", func() bool {
		ov, err := fl.Overview(ctx)
		return err == nil && ov.FlinkVersion == "1.18.1" && ov.TaskManagers == 2 && ov.SlotsTotal == 4
	})

	_, jarID, err := fl.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	if err != nil {
		t.Fatal(err)
	}
	jobID, err := fl.RunJar(ctx, jarID, flink.JarRunRequest{Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a completed checkpoint", func() bool {
		cp, err := fl.Checkpoints(ctx, jobID)
		return err == nil && cp.Latest.Completed != nil
	})

	// Replace a TaskManager pod: the job restarts and restores.
	if err := k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-taskmanager-1"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job restarting", func() bool {
		j, err := fl.Job(ctx, jobID)
		return err == nil && j.State == flink.JobRestarting
	})
	mkPod("demo-taskmanager-2", resources.ComponentTaskManager)
	eventually(t, "the job running again, restored from a checkpoint", func() bool {
		cp, err := fl.Checkpoints(ctx, jobID)
		j, jerr := fl.Job(ctx, jobID)
		return err == nil && jerr == nil && j.State == flink.JobRunning &&
			cp.Latest.Restored != nil && strings.Contains(cp.Latest.Restored.ExternalPath, "/chk-")
	})
	v, err := sim.View(ClusterKey{Namespace: ns, Name: name})
	if err != nil || len(v.Jobs) != 1 || v.Jobs[0].Restarts != 1 {
		t.Errorf("view = %+v, %v", v, err)
	}

	// Deleting the FlinkCluster makes the simulator forget it.
	if err := k8s.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster forgotten", func() bool {
		_, err := sim.View(ClusterKey{Namespace: ns, Name: name})
		return err != nil
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
