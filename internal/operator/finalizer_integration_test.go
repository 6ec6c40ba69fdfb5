package operator_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/testwait"
)

// testFinalizerAdmission: with the mutating webhook the operator keeps in
// self-signed mode, a cluster with a job is stored with the cleanup
// finalizer by its own create, in either served version, and the
// operator does not patch it in afterwards; a session cluster with
// nothing to clean up gets none. It runs in TestConversionWebhook's
// environment.
func testFinalizerAdmission(t *testing.T, ce *conversionEnv) {
	ctx := t.Context()
	c := ce.c
	ns := ce.namespace(t, "finalizer")

	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	testwait.Until(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: operator.MutatingWebhookName}, mwc); err != nil {
			return err
		}
		if len(mwc.Webhooks) != 1 || len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return fmt.Errorf("webhook not injected: %+v", mwc.Webhooks)
		}
		return nil
	})
	job := func(name string) *v1.FlinkCluster {
		fc := memoryCluster(ns, name, "2Gi", nil)
		fc.Spec.Job = &v1.JobSpec{JarURI: "https://artifacts.example.com/job.jar", Parallelism: 1, State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint}
		fc.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "10s"}
		return fc
	}
	// The API server picks the configuration up a moment after it exists.
	testwait.Until(t, 30*time.Second, func() error {
		probe := job("probe")
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return err
		}
		if !slices.Contains(probe.Finalizers, controller.Finalizer) {
			return errors.New("a dry-run create came back without the finalizer")
		}
		return nil
	})

	fc := job("with-job")
	if err := c.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fc.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("a job cluster was stored with finalizers %v, want %s from its create", fc.Finalizers, controller.Finalizer)
	}
	// The controller finds it there: it reconciles the cluster without a
	// write to the object itself (its status write comes after).
	created := fc.ResourceVersion
	testwait.Until(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			return err
		}
		if fc.Status.ObservedGeneration == 0 {
			return errors.New("no status written yet")
		}
		return nil
	})
	if fc.Generation != 1 || !slices.Equal(fc.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("after the first reconcile: generation %d, finalizers %v (created at version %s)", fc.Generation, fc.Finalizers, created)
	}

	// v1alpha1, with TaskManager claims to clean up: converted to v1 for
	// the webhook, and the finalizer back.
	alpha := alphaCluster(ns, "alpha-claims", "kafka:9092")
	alpha.Spec.TaskManager.Storage = &v1alpha1.TaskManagerStorage{Size: resource.MustParse("1Gi")}
	if err := c.Create(ctx, alpha); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alpha.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("a v1alpha1 cluster with claims was stored with finalizers %v", alpha.Finalizers)
	}

	// The webhook's match condition answers as controller.NeedsFinalizer
	// does, one cluster for each way it can answer: the API server calls
	// the webhook only where the finalizer is due, and counts each create
	// its condition spared the call.
	ha := func(name string, mode v1.HighAvailabilityMode) *v1.FlinkCluster {
		fc := memoryCluster(ns, name, "2Gi", nil)
		fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: mode}
		if mode == v1.HighAvailabilityZookeeper {
			fc.Spec.HighAvailability.Zookeeper = &v1.ZookeeperSpec{ConnectString: "zk:2181"}
		}
		return fc
	}
	claims := memoryCluster(ns, "claims", "2Gi", nil)
	claims.Spec.TaskManager.Storage = &v1.TaskManagerStorage{Size: resource.MustParse("1Gi")}
	for _, fc := range []*v1.FlinkCluster{
		memoryCluster(ns, "session", "2Gi", nil),
		job("job"),
		claims,
		ha("ha-kubernetes", v1.HighAvailabilityKubernetes),
		ha("ha-zookeeper", v1.HighAvailabilityZookeeper),
		ha("ha-none", v1.HighAvailabilityNone),
	} {
		want := controller.NeedsFinalizer(fc)
		before := finalizerExclusions(t, ce)
		if err := c.Create(ctx, fc); err != nil {
			t.Fatalf("create %s: %v", fc.Name, err)
		}
		if got := slices.Contains(fc.Finalizers, controller.Finalizer); got != want {
			t.Errorf("%s: stored with finalizers %v; NeedsFinalizer says %t", fc.Name, fc.Finalizers, want)
		}
		wantSpared := 0
		if !want {
			wantSpared = 1
		}
		if spared := finalizerExclusions(t, ce) - before; spared != wantSpared {
			t.Errorf("%s: the match condition spared %d calls of the webhook; NeedsFinalizer says %t", fc.Name, spared, want)
		}
	}
}

// finalizerExclusions is the API server's count of FlinkCluster creates
// the finalizer webhook's match condition spared the call.
func finalizerExclusions(t *testing.T, ce *conversionEnv) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(ce.cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "apiserver_admission_match_condition_exclusions_total{") &&
			strings.Contains(line, `name="finalizer.flinkclusters.`+v1.GroupVersion.Group+`"`) && strings.Contains(line, `operation="CREATE"`) {
			n, err := strconv.Atoi(line[strings.LastIndex(line, " ")+1:])
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	return 0
}
