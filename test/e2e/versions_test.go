package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/resources"
)

// releases is one released version of each supported minor.
var releases = map[string]string{
	"1.17": "1.17.2", "1.18": "1.18.1", "1.19": "1.19.3", "1.20": "1.20.1",
	"2.0": "2.0.1", "2.1": "2.1.1", "2.2": "2.2.0",
}

// TestEverySupportedMinorRuns creates a cluster of each supported minor,
// from the minimal spec plus a checkpoint interval, and waits for it to be
// Available with Flink REST answering in that version.
func TestEverySupportedMinorRuns(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	for _, m := range flink.SupportedMinors {
		version, ok := releases[m.String()]
		if !ok {
			t.Fatalf("no release listed for supported minor %s", m)
		}
		t.Run(m.String(), func(t *testing.T) {
			parallel(t)
			name := "flink-" + strings.ReplaceAll(m.String(), ".", "-")
			fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.FlinkClusterSpec{
				Version:       version,
				TaskManager:   v1.TaskManagerSpec{Replicas: 2},
				Checkpointing: &v1.CheckpointingSpec{Interval: "10s"},
			}}
			if err := k8s.Create(context.Background(), fc); err != nil {
				t.Fatal(err)
			}
			fc = waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 120*time.Second)
			for _, c := range []string{v1.ConditionRestAvailable, v1.ConditionSharedStorage} {
				if !condTrue(fc, c) {
					t.Errorf("%s is not True: %+v", c, fc.Status.Conditions)
				}
			}
			cm := &corev1.ConfigMap{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: resources.ConfigMapName(fc)}, cm); err != nil {
				t.Fatal(err)
			}
			v, _ := flink.ParseVersion(version)
			file := flink.KeysFor(v).File
			if _, ok := cm.Data[file]; !ok || len(cm.Data) != 2 {
				t.Errorf("ConfigMap files %v, want %s and the log4j configuration", keysOf(cm.Data), file)
			}
		})
	}
}

func condTrue(fc *v1.FlinkCluster, typ string) bool {
	for _, c := range fc.Status.Conditions {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func keysOf(m map[string]string) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return fmt.Sprint(out)
}
