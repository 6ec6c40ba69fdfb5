package platform

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A pod's graceful deletion ends without a kubelet, and a deletion that
// was meant for one incarnation of a name never reaches a later one (the
// kubelet's UID precondition, which kwok's own delete lacks).
func TestDeletionsEndOnlyTheirIncarnation(t *testing.T) {
	if missing := MissingBinaries(""); len(missing) > 0 {
		t.Skipf("Component binaries missing from bin/ (%s): run `make tools`", strings.Join(missing, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{StateDir: t.TempDir(), Nodes: 1, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	pods := cs.CoreV1().Pods("default")
	create := func() *corev1.Pod {
		t.Helper()
		pod, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "jobmanager-0"},
			Spec:       corev1.PodSpec{NodeName: "kwok-node-0", Containers: []corev1.Container{{Name: "main", Image: "example.invalid/flink:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}

	first := create()
	grace := int64(30)
	if err := pods.Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, first.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("a pod deleted with a 30 s grace period is still there: %v", err)
	}

	// The successor of the same name, and a deletion of the first that
	// arrives late, as kwok's did.
	second := create()
	f, err := newDeletionFinisher(p.RESTConfig(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.queue.ShutDown()
	// finish is one pod's deletion to its end, through the API server's
	// passing errors.
	finish := func(pod *corev1.Pod) {
		t.Helper()
		inc := podIncarnation{namespace: pod.Namespace, name: pod.Name, uid: pod.UID}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			done, err := f.finish(ctx, inc)
			if err != nil {
				t.Logf("finishing %s: %v", pod.Name, err)
			}
			return done, nil
		}); err != nil {
			t.Fatalf("finishing %s (%s): %v", pod.Name, pod.UID, err)
		}
	}
	finish(first)
	if got, err := pods.Get(ctx, second.Name, metav1.GetOptions{}); err != nil || got.UID != second.UID {
		t.Fatalf("the first incarnation's late deletion reached the second: %v", err)
	}
	finish(second)
	if _, err := pods.Get(ctx, second.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the second incarnation's own deletion: %v, want it gone", err)
	}
}
