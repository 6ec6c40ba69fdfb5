package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// Issue 19, paths 6 and 8: a cluster's HA identity is its own, a deleted
// cluster leaves no job to be recovered, and nothing a user configures
// lets Flink delete the savepoint a job restores from.

// deleteAndWait deletes a FlinkCluster and waits until it and its
// JobManager pods are gone.
func deleteAndWait(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Delete(ctx, getFC(t, ns, name)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the cluster and its pods gone", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1.FlinkCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("FlinkCluster still there (%v)", err)
		}
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}

// TestZooKeeperNamesakesDoNotShareHA: team-a/prod and team/a-prod were one
// identity (team-a-prod) in a shared ZooKeeper; with the UID in it each
// cluster runs its own job under its own leader.
func TestZooKeeperNamesakesDoNotShareHA(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	base := newNamespace(t)
	nsA, nsB := base+"-a", base
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsA}}); err != nil {
		t.Fatal(err)
	}
	zk := &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityZookeeper, Zookeeper: &v1.ZookeeperSpec{ConnectString: "zookeeper.shared:2181"}}
	a, b := jobClusterAt(nsA, "prod", "1.19.3"), jobClusterAt(nsB, "a-prod", "1.19.3")
	a.Spec.HighAvailability, b.Spec.HighAvailability = zk, zk.DeepCopy()
	keyA, keyB := startCluster(t, a), startCluster(t, b)
	gotA, gotB := getFC(t, nsA, "prod"), getFC(t, nsB, "a-prod")
	for _, c := range []struct {
		key flinksim.ClusterKey
		job string
	}{{keyA, gotA.Status.Job.ID}, {keyB, gotB.Status.Job.ID}} {
		if live := liveJobs(t, c.key); len(live) != 1 || live[0].ID != c.job {
			t.Errorf("%s runs %+v, want only its own job %s", c.key, live, c.job)
		}
	}
	if gotA.Status.HighAvailability == nil || gotB.Status.HighAvailability == nil ||
		gotA.Status.HighAvailability.ClusterID == gotB.Status.HighAvailability.ClusterID {
		t.Errorf("HA identities %+v and %+v", gotA.Status.HighAvailability, gotB.Status.HighAvailability)
	}
}

// TestRecreatedClusterDoesNotRecoverTheOldJob: with Kubernetes HA, a
// cluster deleted without its final savepoint (the user said so) leaves its
// job's HA data; the cluster created again under the same name has another
// identity, so its JobManager recovers nothing and runs exactly its own job.
func TestRecreatedClusterDoesNotRecoverTheOldJob(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	newCluster := func() *v1.FlinkCluster {
		fc := jobClusterAt(ns, "again", "1.20.1")
		fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
		return fc
	}
	key := startCluster(t, newCluster())
	old := getFC(t, ns, "again")
	oldJob, oldID := old.Status.Job.ID, old.Status.HighAvailability.KubernetesClusterID
	// Without the final savepoint the old job is never stopped: its HA
	// store still lists it as running.
	patch := []byte(`{"metadata":{"annotations":{"` + v1.AnnotationDeleteWithoutSavepoint + `":"true"}}}`)
	if err := k8s.Patch(context.Background(), old, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, ns, "again")

	startCluster(t, newCluster())
	got := getFC(t, ns, "again")
	live := liveJobs(t, key)
	if len(live) != 1 || live[0].ID != got.Status.Job.ID || live[0].ID == oldJob {
		t.Errorf("jobs running: %+v, want only the new job %s (the old one was %s)", live, got.Status.Job.ID, oldJob)
	}
	if id := got.Status.HighAvailability.KubernetesClusterID; id == oldID || !strings.Contains(id, string(got.UID)) {
		t.Errorf("kubernetes.cluster-id %q, the old one %q, the UID %s", id, oldID, got.UID)
	}
}

// stoppedSavepoint is the savepoint path in the event a deletion ended with.
func stoppedSavepoint(t *testing.T, ns, name string) string {
	t.Helper()
	re := regexp.MustCompile(`with savepoint (\S+) before deleting`)
	var path string
	eventually(t, 30*time.Second, "the StoppedWithSavepoint event", func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == "StoppedWithSavepoint" {
				if m := re.FindStringSubmatch(e.Note); m != nil {
					path = m[1]
					return nil
				}
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
	return path
}

// TestDeletionStopsTheJobWithASavepoint: deleting a cluster (Kubernetes
// HA) stops its job with a savepoint and names it, then removes the
// JobManagers and Flink's HA ConfigMaps; a cluster created from it
// restores it. The run request sends NO_CLAIM, so the new job's
// checkpoints never delete it: a third cluster restores from it again.
func TestDeletionStopsTheJobWithASavepoint(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	newCluster := func() *v1.FlinkCluster {
		fc := jobClusterAt(ns, "final", "2.0.1")
		fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
		return fc
	}
	key := startCluster(t, newCluster())
	oldJob := getFC(t, ns, "final").Status.Job.ID
	deleteAndWait(t, ns, "final")
	if j := simJob(t, key, oldJob); j.State != "FINISHED" || j.StopsTriggered != 1 {
		t.Fatalf("old job %s after %d stops, want FINISHED by one stop-with-savepoint", j.State, j.StopsTriggered)
	}
	sp := stoppedSavepoint(t, ns, "final")

	restoreFrom := func() *v1.FlinkCluster {
		fc := newCluster()
		fc.Spec.Job.InitialSavepointPath = sp
		startCluster(t, fc)
		return getFC(t, ns, "final")
	}
	got := restoreFrom()
	if j := simJob(t, key, got.Status.Job.ID); j.RestoredFrom == nil || j.RestoredFrom.ExternalPath != sp {
		t.Fatalf("job %s restored from %+v, want %s", got.Status.Job.ID, j.RestoredFrom, sp)
	}
	// More checkpoints than are retained (3) complete after the restore;
	// with CLAIM the last of them would have deleted the savepoint.
	eventually(t, time.Minute, "five checkpoints after the restore", func() error {
		if j := simJob(t, key, got.Status.Job.ID); j.CheckpointsCompleted < 5 {
			return fmt.Errorf("%d", j.CheckpointsCompleted)
		}
		return nil
	})
	patch := []byte(`{"metadata":{"annotations":{"` + v1.AnnotationDeleteWithoutSavepoint + `":"true"}}}`)
	if err := k8s.Patch(context.Background(), got, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, ns, "final")
	again := restoreFrom()
	if j := simJob(t, key, again.Status.Job.ID); j.RestoredFrom == nil || j.RestoredFrom.ExternalPath != sp {
		t.Fatalf("third job restored from %+v, want %s", j.RestoredFrom, sp)
	}
}

// TestClaimModeIsRefusedAtAdmission: a user's CLAIM would let Flink delete
// the savepoint the operator recorded; the API server refuses it and says
// why.
func TestClaimModeIsRefusedAtAdmission(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "claim", "1.19.3")
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"execution.savepoint-restore-mode": "CLAIM"}
	err := k8s.Create(context.Background(), fc)
	if err == nil {
		t.Fatal("a FlinkCluster setting execution.savepoint-restore-mode: CLAIM was admitted")
	}
	for _, want := range []string{"spec.flinkConfiguration must not set execution.savepoint-restore-mode", "the claim mode is always NO_CLAIM"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
}
