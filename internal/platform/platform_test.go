package platform_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/datapilot/datapilot/internal/platform"
)

func TestPlatformRunsPodsOnFakeNodes(t *testing.T) {
	if missing := platform.MissingBinaries(""); len(missing) > 0 {
		t.Skipf("Component binaries missing from bin/ (%s): run `make tools`", strings.Join(missing, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	p, err := platform.Start(ctx, platform.Options{
		StateDir: t.TempDir(),
		Nodes:    3,
		Logger:   testr.New(t),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = p.Stop()
		}
	})
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
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=sleeper"})
		if err != nil {
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
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	for name, pid := range pids {
		// Stop waited for each child, so the PID is gone (or reused by a
		// process that is not ours, which Signal 0 cannot tell; the window is
		// negligible in a test).
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) is still running after Stop", name, pid)
		}
	}
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
