package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
)

func warningEvents(t *testing.T, ns, name, reason string) int32 {
	t.Helper()
	return warnings(t, ns, name)[reason]
}

// warnings counts the Warning events about a FlinkCluster by reason, each
// series by its count.
func warnings(t *testing.T, ns, name string) map[string]int32 {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := map[string]int32{}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Type == "Warning" {
			n[e.Reason]++
			if e.Series != nil {
				n[e.Reason] += e.Series.Count - 1
			}
		}
	}
	return n
}

// TestHealthToleratesJitterAndDegradesOnRepeatedFailure drives the REST
// simulator: one 503 is a Warning event and nothing else; failures in a row
// make the cluster Degraded; recovery clears it.
func TestHealthToleratesJitterAndDegradesOnRepeatedFailure(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "jitter", Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{Version: "1.18.1", JobManager: v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2}, Health: &v1.HealthPolicy{FailureThreshold: 3}}
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	key := simKey(ns, "jitter")
	waitCondition(t, ns, "jitter", v1.ConditionRestAvailable, metav1.ConditionTrue, time.Minute)
	stable := waitCondition(t, ns, "jitter", v1.ConditionAvailable, metav1.ConditionTrue, time.Minute)

	// One 503: a Warning event, no status change at all.
	before, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	sim.Engine.InjectUnavailable(key, 1)
	eventually(t, 30*time.Second, "a Warning event for the 503", func() error {
		if n := warningEvents(t, ns, "jitter", "RestUnavailable"); n < 1 {
			// Which requests came since, and whether one took the 503:
			// what a failure needs to tell a poller that did not probe
			// from a request that was not the probe.
			now, err := sim.Engine.View(key)
			if err != nil {
				return err
			}
			since := map[string]int{}
			for e, c := range now.Requests {
				if d := c - before.Requests[e]; d > 0 {
					since[e] = d
				}
			}
			return fmt.Errorf("%d events; 503s left %d; requests since the injection %v; Warnings by reason %v",
				n, now.UnavailableRemaining, since, warnings(t, ns, "jitter"))
		}
		return nil
	})
	waitRequests(t, key, "GET /overview", 3) // three more probe rounds, all healthy
	after := getFC(t, ns, "jitter")
	if after.ResourceVersion != stable.ResourceVersion {
		t.Errorf("one 503 changed the FlinkCluster: phase %s, conditions %+v", after.Status.Phase, after.Status.Conditions)
	}

	// Failures in a row: Degraded, with the level's reason.
	sim.Engine.InjectUnavailable(key, -1)
	deg := waitCondition(t, ns, "jitter", v1.ConditionDegraded, metav1.ConditionTrue, time.Minute)
	if c := meta.FindStatusCondition(deg.Status.Conditions, v1.ConditionDegraded); c.Reason != "RestUnavailable" {
		t.Errorf("Degraded reason %s", c.Reason)
	}
	if deg.Status.Phase != v1.PhaseDegraded || meta.IsStatusConditionTrue(deg.Status.Conditions, v1.ConditionAvailable) ||
		!meta.IsStatusConditionFalse(deg.Status.Conditions, v1.ConditionRestAvailable) {
		t.Errorf("degraded cluster: phase %s, conditions %+v", deg.Status.Phase, deg.Status.Conditions)
	}
	// The events API folds repeats into a series whose count the recorder
	// publishes lazily; the health package's own test counts each probe.
	if n := warningEvents(t, ns, "jitter", "RestUnavailable"); n < 2 {
		t.Errorf("%d Warning events for 1 + 3 failed probes", n)
	}

	// Recovery clears it.
	sim.Engine.ClearFaults(key)
	rec := waitCondition(t, ns, "jitter", v1.ConditionDegraded, metav1.ConditionFalse, time.Minute)
	if rec.Status.Phase != v1.PhaseRunning || !meta.IsStatusConditionTrue(rec.Status.Conditions, v1.ConditionAvailable) {
		t.Errorf("after recovery: phase %s, conditions %+v", rec.Status.Phase, rec.Status.Conditions)
	}
}
