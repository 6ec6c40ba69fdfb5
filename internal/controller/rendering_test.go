package controller_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

func unstructuredCluster(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "FlinkCluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	return u
}

// TestMinimalSpecIsComplete: a version alone is a whole spec. Every block
// defaults, and the cluster renders with memory for both processes, sized
// to the containers.
func TestMinimalSpecIsComplete(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, unstructuredCluster(ns, "tiny", map[string]any{"version": "2.0.1"})); err != nil {
		t.Fatalf("a spec of only spec.version was refused: %v", err)
	}
	fc := getCluster(t, ns, "tiny")
	if fc.Spec.JobManager.Replicas != 1 || fc.Spec.TaskManager.Replicas != 1 || fc.Spec.TaskManager.Slots != 1 {
		t.Errorf("defaults: %d JobManagers, %d TaskManagers with %d slots; want 1, 1, 1",
			fc.Spec.JobManager.Replicas, fc.Spec.TaskManager.Replicas, fc.Spec.TaskManager.Slots)
	}
	cm := &corev1.ConfigMap{}
	testwait.Until(t, 10*time.Second, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tiny-config"}, cm)
	})
	// Quoted or not, as the YAML writer decides: both read as the string.
	for _, line := range []string{`jobmanager.memory.process.size: "?1600m"?\n`, `taskmanager.memory.process.size: "?1728m"?\n`} {
		if !regexp.MustCompile(line).MatchString(cm.Data["config.yaml"]) {
			t.Errorf("config.yaml lacks %s:\n%s", line, cm.Data["config.yaml"])
		}
	}
	for name, want := range map[string]string{"tiny-jobmanager": "1600Mi", "tiny-taskmanager": "1728Mi"} {
		var pod corev1.PodSpec
		if strings.HasSuffix(name, "jobmanager") {
			d := &appsv1.StatefulSet{}
			testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d) })
			pod = d.Spec.Template.Spec
		} else {
			s := &appsv1.StatefulSet{}
			testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s) })
			pod = s.Spec.Template.Spec
		}
		r := pod.Containers[0].Resources
		lim, req := r.Limits[corev1.ResourceMemory], r.Requests[corev1.ResourceMemory]
		if lim.Cmp(resource.MustParse(want)) != 0 || req.Cmp(lim) != 0 {
			t.Errorf("%s memory: request %s, limit %s; want both %s", name, req.String(), lim.String(), want)
		}
	}
}

// TestEveryRenderedKeyIsRefused renders, for every supported minor, the
// clusters that set the most keys, and sends each key the operator wrote
// back as a user setting: admission must refuse every one, naming it.
func TestEveryRenderedKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	keys := map[string][]string{} // key -> minors that render it
	for _, m := range flink.SupportedMinors {
		for _, fc := range keyRichClusters(fmt.Sprintf("%s.1", m)) {
			cfg, err := resources.RenderConfig(fc, resources.Platform{Storage: &v1.StorageSpec{URI: itStateStorage}})
			if err != nil {
				t.Fatal(err)
			}
			for k := range cfg.Settings {
				if _, user := fc.Spec.FlinkConfiguration[k]; !user {
					keys[k] = append(keys[k], m.String())
				}
			}
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		if key == flink.LastStateRetentionKey {
			continue // owned with last-state only; TestBadInputsAreRejectedAtAdmission covers it
		}
		u := unstructuredCluster(ns, "owned", map[string]any{
			"version": "2.2.0", "flinkConfiguration": map[string]any{key: "x"},
		})
		err := k8s.Create(ctx, u, client.DryRunAll)
		if err == nil {
			t.Errorf("admission accepted %s (rendered for %v)", key, keys[key])
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.flinkConfiguration must not set "+key+":") {
			t.Errorf("%s: want a refusal naming the key, got %v", key, err)
		}
	}
	if len(sorted) < 20 {
		t.Errorf("only %d rendered keys: the fixtures lost their coverage", len(sorted))
	}
}

// keyRichClusters are the specs that make rendering write the most keys.
func keyRichClusters(version string) []*v1.FlinkCluster {
	zk := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "zk", Namespace: "ns"}, Spec: v1.FlinkClusterSpec{
		Version:            version,
		JobManager:         v1.JobManagerSpec{Replicas: 3},
		TaskManager:        v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		HighAvailability:   &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityZookeeper, Zookeeper: &v1.ZookeeperSpec{ConnectString: "zk:2181"}},
		Checkpointing:      &v1.CheckpointingSpec{Interval: "30s", Retention: 3},
		Job:                &v1.JobSpec{JarURI: "https://a/j.jar", UpgradeMode: v1.UpgradeLastState},
		FlinkConfiguration: v1.FlinkConfiguration{"state.backend.type": "rocksdb"},
	}}
	k8sHA := zk.DeepCopy()
	k8sHA.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	return []*v1.FlinkCluster{zk, k8sHA}
}

// TestPodLocalStateIsNotDeployed: an HA cluster whose HA metadata would be
// on each JobManager's own disk is admitted (admission cannot see the
// platform's storage) but not deployed, and says why; pointing it at
// shared storage deploys it.
func TestPodLocalStateIsNotDeployed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := referenceExample(t, ns)
	u.Object["spec"].(map[string]any)["highAvailability"].(map[string]any)["storageDir"] = "file:///flink-data/ha"
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	fc := waitCondition(t, ns, "realtime-warehouse", v1.ConditionSharedStorage, metav1.ConditionFalse)
	c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionSharedStorage)
	if c.Reason != "SharedStorageRequired" || !strings.Contains(c.Message, "spec.highAvailability (file:///flink-data/ha)") {
		t.Errorf("SharedStorage = %s: %s", c.Reason, c.Message)
	}
	if d := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue || d.Reason != "SharedStorageRequired" {
		t.Errorf("Degraded = %+v", d)
	}
	// The status above was written by the reconcile that decided not to
	// deploy, so no child exists.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-jobmanager"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("JobManager of a blocked cluster: %v, want not found", err)
	}
	events := &corev1.EventList{}
	testwait.Until(t, 10*time.Second, func() error {
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "SharedStorageRequired" && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no SharedStorageRequired warning among %d events", len(events.Items))
	})

	fc.Spec.HighAvailability.StorageDir = "s3://team-bucket/ha"
	if err := k8s.Update(ctx, fc); err != nil {
		t.Fatal(err)
	}
	fc = waitCondition(t, ns, "realtime-warehouse", v1.ConditionSharedStorage, metav1.ConditionTrue)
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionSharedStorage); !strings.Contains(c.Message, "HA metadata at s3://team-bucket/ha") ||
		!strings.Contains(c.Message, "checkpoints at "+itStateStorage+"/"+ns+"/realtime-warehouse/checkpoints") {
		t.Errorf("SharedStorage message: %s", c.Message)
	}
	testwait.Until(t, 10*time.Second, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-jobmanager"}, &appsv1.StatefulSet{})
	})
}

// TestValuesFitTheirFormat: a value flink-conf.yaml cannot carry
// is refused on 1.17 (TestBadInputsAreRejectedAtAdmission) but admitted on
// 1.19, whose config.yaml quotes it.
func TestValuesFitTheirFormat(t *testing.T) {
	ns := namespace(t)
	u := unstructuredCluster(ns, "hash", map[string]any{"version": "1.19.3", "flinkConfiguration": map[string]any{"pipeline.name": "orders #1 "}})
	if err := k8s.Create(context.Background(), u, client.DryRunAll); err != nil {
		t.Errorf("config.yaml can carry %q, but it was refused: %v", "orders #1 ", err)
	}
}

// TestUnreadableStatusFailsClosed: a status.deployedSpec that does not
// decode is not taken for a first deployment (which would roll the new
// spec out with no savepoint): the cluster is Degraded, naming the field,
// and its children are not touched.
func TestUnreadableStatusFailsClosed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := referenceExample(t, ns)
	spec := u.Object["spec"].(map[string]any)
	spec["job"] = map[string]any{"jarURI": "https://artifacts.invalid/job.jar"}
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	fc := getCluster(t, ns, "realtime-warehouse")
	testwait.Until(t, 10*time.Second, func() error {
		fc = getCluster(t, ns, "realtime-warehouse")
		if fc.Status.DeployedSpec == nil {
			return fmt.Errorf("no deployed spec recorded yet")
		}
		return nil
	})
	// Another writer (a bad migration, a hand edit) breaks the record. A
	// status write of the operator already in flight may put the good
	// record back; then the break is made again.
	patch := []byte(`{"status":{"deployedSpec":{"version":17,"jobManager":"three"}}}`)
	testwait.Until(t, 20*time.Second, func() error {
		fc = getCluster(t, ns, "realtime-warehouse")
		if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			return nil
		}
		if !strings.Contains(string(fc.Status.DeployedSpec.Raw), `"three"`) {
			if err := k8s.Status().Patch(ctx, fc, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return err
			}
		}
		// Status writes wake no reconcile; anything else does (a label).
		label := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, time.Now().UnixNano())
		if err := k8s.Patch(ctx, fc, client.RawPatch(types.MergePatchType, []byte(label))); err != nil {
			return err
		}
		return fmt.Errorf("not Degraded yet")
	})
	c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDegraded)
	if c.Reason != "StatusUnreadable" || !strings.Contains(c.Message, "status.deployedSpec does not decode") {
		t.Errorf("Degraded = %s: %s", c.Reason, c.Message)
	}
	if fc.Status.Upgrade != nil {
		t.Errorf("an upgrade started from an unreadable status: %+v", fc.Status.Upgrade)
	}
}
