package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

// kubectl runs bin/kubectl against the platform, as a user following the
// README would.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", plat.KubeconfigPath()}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

var nsSeq int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsSeq++
	name := fmt.Sprintf("e2e-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), nsSeq)
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.Trim(name, "-")
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { retire(t, name) })
	return name
}

// retire deletes a passed test's namespace, without waiting: every cluster
// left behind was polled by the operator, probed by the health poller and
// checkpointed by the simulator each second until the tier ended, which
// slowed the later tests of a full run to twice their time alone. Their
// jobs' state is no test's concern any more, so they go without a final
// savepoint. A failed test keeps its namespace to be looked at.
func retire(t *testing.T, ns string) {
	if t.Failed() {
		return
	}
	ctx := context.Background()
	var list v1.FlinkClusterList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Logf("Retiring namespace %s: %v", ns, err)
		return
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1.AnnotationDeleteWithoutSavepoint+`":"true"}}}`))
	for i := range list.Items {
		if err := k8s.Patch(ctx, &list.Items[i], patch); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("Retiring %s/%s: %v", ns, list.Items[i].Name, err)
		}
	}
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
		t.Logf("Retiring namespace %s: %v", ns, err)
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	testwait.Until(t, timeout, func() error {
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

func getFC(t *testing.T, ns, name string) *v1.FlinkCluster {
	t.Helper()
	fc := &v1.FlinkCluster{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	return fc
}

// waitCondition waits until the condition has the status at the current
// generation, and returns the cluster.
func waitCondition(t *testing.T, ns, name, cond string, want metav1.ConditionStatus, timeout time.Duration) *v1.FlinkCluster {
	t.Helper()
	var fc *v1.FlinkCluster
	eventually(t, timeout, fmt.Sprintf("%s/%s %s=%s", ns, name, cond, want), func() error {
		fc = getFC(t, ns, name)
		c := meta.FindStatusCondition(fc.Status.Conditions, cond)
		if c == nil || c.Status != want || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("%s is %+v (generation %d, phase %s)", cond, c, fc.Generation, fc.Status.Phase)
		}
		return nil
	})
	return fc
}

func patchSpec(t *testing.T, ns, name string, mutate func(*v1.FlinkCluster)) {
	t.Helper()
	eventually(t, 10*time.Second, "patch spec", func() error {
		fc := getFC(t, ns, name)
		base := fc.DeepCopy()
		mutate(fc)
		return k8s.Patch(context.Background(), fc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

// waitRequests waits until the simulator has answered n more requests of
// one endpoint ("GET /jobs/{jobid}") for a cluster: an observable sign that
// the operator looked again, for negative checks.
func waitRequests(t *testing.T, key flinksim.ClusterKey, endpoint string, n int) {
	t.Helper()
	waitRequestsSince(t, key, endpoint, requests(t, key, endpoint), n)
}

// waitRequestsSince is waitRequests counted from a number of requests read
// before the wake-up: a single reconcile that a test's own write wakes can
// answer before the test reads the count after the write, and then no
// further request comes.
func waitRequestsSince(t *testing.T, key flinksim.ClusterKey, endpoint string, start, n int) {
	t.Helper()
	// The operator sends them at its own cadence, which a loaded machine
	// slows: the wait grows with the count (60 autopilot samples at 1 s
	// took more than a minute in a full run).
	timeout := max(time.Minute, time.Duration(n)*3*time.Second)
	eventually(t, timeout, fmt.Sprintf("%d more %s requests", n, endpoint), func() error {
		if got := requests(t, key, endpoint) - start; got < n {
			return fmt.Errorf("%d so far", got)
		}
		return nil
	})
}

// requests is how many requests of endpoint the simulator answered for a
// cluster so far.
func requests(t *testing.T, key flinksim.ClusterKey, endpoint string) int {
	t.Helper()
	view, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	return view.Requests[endpoint]
}

// simKey is the simulator's key of a FlinkCluster: the JobManager Service
// in front of its JobManagers, through which it is reached.
func simKey(ns, name string) flinksim.ClusterKey {
	return flinksim.ClusterKey{Namespace: ns, Name: resources.JobManagerName(&v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})}
}
