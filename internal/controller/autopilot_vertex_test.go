package controller

import (
	"testing"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// The autopilot's per-vertex targets enter the spec the lifecycle rolls
// out; the run request carries them in Flink's Map format.
func TestEffectiveSpecCarriesEachVertex(t *testing.T) {
	fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{
		TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2},
		Job:         &v1.JobSpec{Parallelism: 2},
		Autoscaler:  &v1.AutoscalerSpec{Mode: v1.AutoscalerApply},
	}}
	fc.Status.Autoscaler = &v1.AutoscalerStatus{Parallelism: 12, Vertices: []v1.VertexParallelism{
		{ID: "9aea9c11815ba141c2caef343cecc8d9", Name: "Source: orders", Parallelism: 2},
		{ID: "2a26f8242696cbef2c3d9da90c5e23ee", Name: "Enrich", Parallelism: 12},
	}}
	spec, rescale := effectiveSpec(fc)
	if !rescale || spec.Job.Parallelism != 12 || spec.TaskManager.Replicas != 6 || len(spec.Job.VertexParallelism) != 2 || spec.Job.VertexParallelism[1].Name != "" {
		t.Fatalf("%v %+v %+v", rescale, spec.Job, spec.TaskManager)
	}
	if got, want := overridesFor(spec.Job.VertexParallelism), "9aea9c11815ba141c2caef343cecc8d9:2,2a26f8242696cbef2c3d9da90c5e23ee:12"; got != want {
		t.Errorf("overrides %q, want %q", got, want)
	}
	// Recommend mode changes nothing.
	fc.Spec.Autoscaler.Mode = v1.AutoscalerRecommend
	if spec, rescale := effectiveSpec(fc); rescale || spec.Job.VertexParallelism != nil || spec.Job.Parallelism != 2 {
		t.Errorf("recommend mode: %+v", spec.Job)
	}
}
