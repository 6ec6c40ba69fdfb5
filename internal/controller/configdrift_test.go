package controller_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/testwait"
)

// configRepairs is the operator's count of ConfigMap repairs.
func configRepairs(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "datapilot_child_applies_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == "ConfigMap" && labels["reason"] == "repair" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestConfigMapEditIsRepaired edits the rendered ConfigMap behind the
// operator's back, as a Flink pod with the HA Role's ConfigMap rights
// could: a changed file, then an added one. The spec hash annotation stays
// as the operator wrote it; the operator must notice the data, restore it
// and say so in an event. A change to the metadata alone is no repair.
func TestConfigMapEditIsRepaired(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-config"}
	rendered := &corev1.ConfigMap{}
	testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, key, rendered) })

	edit := func(change func(cm *corev1.ConfigMap)) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, key, cm); err != nil {
			t.Fatal(err)
		}
		base := cm.DeepCopy()
		change(cm)
		if err := k8s.Patch(ctx, cm, client.MergeFrom(base), client.FieldOwner("intruder")); err != nil {
			t.Fatal(err)
		}
	}
	restored := func() {
		t.Helper()
		testwait.Until(t, 15*time.Second, func() error {
			cm := &corev1.ConfigMap{}
			if err := k8s.Get(ctx, key, cm); err != nil {
				return err
			}
			if !maps.Equal(cm.Data, rendered.Data) || len(cm.BinaryData) > 0 {
				return fmt.Errorf("ConfigMap data not restored: %d files, %d binary", len(cm.Data), len(cm.BinaryData))
			}
			return nil
		})
	}
	// Events of one reason on one object merge into a series, so the
	// repairs are counted by the operator's apply counter.
	start := configRepairs(t)
	repairs := func() int { return int(configRepairs(t) - start) }
	waitRepairs := func(want int) {
		t.Helper()
		testwait.Until(t, 15*time.Second, func() error {
			if got := repairs(); got < want {
				return fmt.Errorf("%d ConfigMap repairs, want %d", got, want)
			}
			return nil
		})
	}
	waitEvent := func(note string) {
		t.Helper()
		testwait.Until(t, 15*time.Second, func() error {
			events := &eventsv1.EventList{}
			if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "ConfigRepaired" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, note) {
					return nil
				}
			}
			return fmt.Errorf("no ConfigRepaired event saying %q", note)
		})
	}

	// A line that moves the REST port, appended to the rendered file.
	edit(func(cm *corev1.ConfigMap) { cm.Data["flink-conf.yaml"] += "rest.port: 1\n" })
	restored()
	waitRepairs(1)
	waitEvent("changed flink-conf.yaml")

	// A file the rendering does not have; the volume would project it.
	// The events API merges an event of the same reason about the same
	// version of the cluster into the first one's series, keeping the
	// first one's note: whether the cluster's status was written between
	// the two repairs decides which of the two the user sees
	// (TestConfigDriftSays pins the words).
	edit(func(cm *corev1.ConfigMap) { cm.BinaryData = map[string][]byte{"log4j.properties": []byte("x")} })
	restored()
	waitRepairs(2)
	testwait.Until(t, 15*time.Second, func() error {
		events := &eventsv1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason != "ConfigRepaired" || e.Type != corev1.EventTypeWarning {
				continue
			}
			if strings.Contains(e.Note, "added log4j.properties") ||
				strings.Contains(e.Note, "changed flink-conf.yaml") && e.Series != nil && e.Series.Count >= 2 {
				return nil
			}
		}
		return fmt.Errorf("the second repair is in no ConfigRepaired event, nor in the first one's series")
	})

	// A label moves the resourceVersion, and the data is still the
	// rendered one: read, and not repaired. A data edit after it is the
	// positive event that shows the operator has seen the label by then.
	edit(func(cm *corev1.ConfigMap) { cm.Labels["team"] = "payments" })
	edit(func(cm *corev1.ConfigMap) { cm.Data["log4j-console.properties"] = "rootLogger.level = OFF\n" })
	restored()
	waitRepairs(3)
	if got := repairs(); got != 3 {
		t.Errorf("%d ConfigMap repairs, want 3: the label change was repaired too", got)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels["team"] != "payments" {
		t.Error(errors.New("the repair removed another manager's label"))
	}
}

// TestCreatedConfigMapIsNotReadBack: the ConfigMap the operator created
// holds exactly its rendering, so the reconciles after the create (for a
// new cluster, the one that says it is Available) do not read its data
// back; an edit, a new resourceVersion, is read (TestConfigMapEditIsRepaired).
func TestCreatedConfigMapIsNotReadBack(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fc := referenceExample(t, ns)
	if err := k8s.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	// The first status is written by a reconcile after the create's
	// (controller.CreatingWait), and it applied the children first.
	testwait.Until(t, 30*time.Second, func() error {
		got := &v1.FlinkCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fc), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration == 0 {
			return errors.New("no status written yet")
		}
		return nil
	})
	reads := int64(0)
	if n, ok := configMapReads.Load(ns); ok {
		reads = n.(*atomic.Int64).Load()
	}
	if reads != 0 {
		t.Errorf("the operator read its own new ConfigMap back %d times", reads)
	}
}
