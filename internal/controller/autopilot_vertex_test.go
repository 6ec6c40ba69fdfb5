package controller

import (
	"testing"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// The autopilot's per-vertex targets enter its proposal to the lifecycle
// (which rolls them out); the run request carries them in Flink's Map
// format.
func TestProposalCarriesEachVertex(t *testing.T) {
	spec := &v1.FlinkClusterSpec{
		TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2},
		Job:         &v1.JobSpec{Parallelism: 2},
		Autoscaler:  &v1.AutoscalerSpec{Mode: v1.AutoscalerApply},
	}
	st := &v1.AutoscalerStatus{Parallelism: 12, Vertices: []v1.VertexParallelism{
		{ID: "9aea9c11815ba141c2caef343cecc8d9", Name: "Source: orders", Parallelism: 2},
		{ID: "2a26f8242696cbef2c3d9da90c5e23ee", Name: "Enrich", Parallelism: 12},
	}}
	r := proposal(autoscalerOf(spec, st), st)
	if r == nil || r.Parallelism != 12 || r.TaskManagers != 6 || len(r.Vertices) != 2 || r.Vertices[1].Name != "" {
		t.Fatalf("proposal %+v", r)
	}
	if got, want := overridesFor(r.Vertices), "9aea9c11815ba141c2caef343cecc8d9:2,2a26f8242696cbef2c3d9da90c5e23ee:12"; got != want {
		t.Errorf("overrides %q, want %q", got, want)
	}
	// Recommend mode proposes nothing.
	spec.Autoscaler.Mode = v1.AutoscalerRecommend
	if r := proposal(autoscalerOf(spec, st), st); r == nil || r.Parallelism != 0 || r.Vertices != nil {
		t.Errorf("recommend mode: %+v", r)
	}
}
