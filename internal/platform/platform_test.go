package platform_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/platform/platformtest"
)

func TestPlatformRunsPodsOnFakeNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	stateDir := t.TempDir()
	p := platformtest.StartWith(t, platform.Options{StateDir: stateDir, Nodes: 3})
	t.Logf("Platform started in %s", p.StartupDuration().Round(time.Millisecond))

	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	replicas := int32(3)
	labels := map[string]string{"app": "sleeper"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "main",
					Image: "example.invalid/sleeper:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: *mustQuantity(t, "2"), corev1.ResourceMemory: *mustQuantity(t, "4Gi"),
					}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating deployment: %v", err)
	}

	var pods *corev1.PodList
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var lerr error
		pods, lerr = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=sleeper"})
		if lerr != nil {
			return false, nil
		}
		if len(pods.Items) != 3 {
			return false, nil
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodRunning || !podReady(&pod) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("Pods did not become Running and Ready: %v; pods: %s", err, describe(pods))
	}
	for _, pod := range pods.Items {
		if !strings.HasPrefix(pod.Spec.NodeName, "kwok-node-") {
			t.Errorf("Pod %s is on node %q, want a fake node", pod.Name, pod.Spec.NodeName)
		}
		if pod.Status.PodIP == "" {
			t.Errorf("Pod %s has no IP", pod.Name)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "sleeper", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 3, nil
	})
	if err != nil {
		t.Errorf("Deployment did not report 3 available replicas: %v", err)
	}

	pids := p.PIDs()
	if len(pids) != len(platform.Components) {
		t.Errorf("PIDs() = %v, want one per component", pids)
	}

	// A second start in the same state dir, as after a crash that left the
	// children running, first stops the previous run's children.
	p2 := platformtest.StartWith(t, platform.Options{StateDir: stateDir, Nodes: 1})
	assertGone(t, pids)
	t.Logf("Restarted over leftovers in %s", p2.StartupDuration().Round(time.Millisecond))
	_ = p.Stop()

	pids2 := p2.PIDs()
	if err := p2.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, pids2)
}

// assertGone fails for each process still running. Stop and the leftover
// cleanup wait for each child, so none may remain (a PID reused by another
// process in the meantime is possible in theory, negligible in a test).
func assertGone(t *testing.T, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
			t.Errorf("%s (pid %d) is still running", name, pid)
		}
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describe(pods *corev1.PodList) string {
	if pods == nil {
		return "none"
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s node=%q phase=%s ready=%v; ", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p))
	}
	return b.String()
}

func mustQuantity(t *testing.T, s string) *resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return &q
}

// TestRestartWithCompactionExpiresResourceVersions: an API server restarted
// around an etcd compaction serves no resource version from before it. A
// watch from one is accepted (HTTP 200) and its one event is an ERROR with
// status 410 Expired; an exact list is refused with HTTP 410.
func TestRestartWithCompactionExpiresResourceVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := platformtest.StartWith(t, platform.Options{Nodes: 1})
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var compacted int64
	if err := p.RestartWith(ctx, platform.KubeAPIServer, func(ctx context.Context) error {
		compacted, err = p.CompactEtcd(ctx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	old, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if compacted <= old {
		t.Fatalf("compacted at revision %d, not past the ConfigMap's %d", compacted, old)
	}

	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from %s: %v, want it accepted and ended by an ERROR event", cm.ResourceVersion, err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		st, isStatus := ev.Object.(*metav1.Status)
		if !ok || ev.Type != watch.Error || !isStatus || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Errorf("first event of a watch from %s: %s %+v, want ERROR 410 Expired", cm.ResourceVersion, ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no event from a watch at a compacted resource version")
	}

	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("exact list at %s: %v, want 410 Expired", cm.ResourceVersion, err)
	}
}
