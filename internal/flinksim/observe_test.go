package flinksim

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"flink:1.18.1":                         "1.18.1",
		"flink:1.17.2-scala_2.12-java11":       "1.17.2",
		"registry:5000/team/flink:1.20.0":      "1.20.0",
		"registry:5000/team/flink":             "",
		"flink:latest":                         "",
		"flink:1.18":                           "",
		"flink@sha256:0123456789abcdef":        "",
		"flink:1.19.1@sha256:0123456789abcdef": "1.19.1",
		"":                                     "",
	} {
		if got := ImageVersion(image); got != want {
			t.Errorf("ImageVersion(%q) = %q, want %q", image, got, want)
		}
	}
}

func pod(uid, component, image string, ready bool, age time.Duration) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: uid, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0).Add(-age)),
			Labels: map[string]string{resources.LabelComponent: component, resources.LabelVersion: "1.17.1"},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: component, Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestObservationFor(t *testing.T) {
	fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{Version: "1.16.3", TaskManager: v1.TaskManagerSpec{Slots: 4}}}
	terminating := pod("tm-gone", "taskmanager", "flink:1.18.1", true, 0)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want Observation
	}{
		{"no pods", nil, Observation{Version: "1.16.3", SlotsPerTaskManager: 4}},
		{"ready pods", []corev1.Pod{
			pod("jm", "jobmanager", "flink:1.18.1", true, 0),
			pod("tm-a", "taskmanager", "flink:1.18.1", true, 0),
			pod("tm-b", "taskmanager", "flink:1.18.1", false, 0),
			terminating,
		}, Observation{JobManagerReady: true, JobManagerUID: "jm", Version: "1.18.1", TaskManagerUIDs: []string{"tm-a"}, SlotsPerTaskManager: 4}},
		{"oldest ready JobManager leads; label when the tag has no version", []corev1.Pod{
			pod("jm-new", "jobmanager", "flink:1.18.1", true, time.Minute),
			pod("jm-old", "jobmanager", "flink:latest", true, time.Hour),
			pod("jm-older", "jobmanager", "flink:1.18.1", false, 2*time.Hour),
		}, Observation{JobManagerReady: true, JobManagerUID: "jm-old", Version: "1.17.1", SlotsPerTaskManager: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ObservationFor(fc, tc.pods)
			if got.JobManagerReady != tc.want.JobManagerReady || got.JobManagerUID != tc.want.JobManagerUID ||
				got.Version != tc.want.Version || got.SlotsPerTaskManager != tc.want.SlotsPerTaskManager ||
				!slices.Equal(got.TaskManagerUIDs, tc.want.TaskManagerUIDs) {
				t.Errorf("ObservationFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}
