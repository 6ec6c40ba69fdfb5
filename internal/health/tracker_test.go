package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// A verdict belongs to the incarnation of the cluster that was probed: a
// cluster deleted and created again under its name reads none until it is
// probed itself (GetFor), though Get still returns the name's last.
func TestGetForIsOneIncarnations(t *testing.T) {
	tr := NewTracker()
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	tr.update(key, func(e *entry) { e.uid, e.verdict = "old", Verdict{RunsJobs: true} })
	if v, ok := tr.GetFor(key, "old"); !ok || !v.RunsJobs {
		t.Errorf("GetFor the probed incarnation: %+v, %v; want its verdict", v, ok)
	}
	if v, ok := tr.GetFor(key, "new"); ok {
		t.Errorf("GetFor a new incarnation of the name: %+v; want none", v)
	}
	if _, ok := tr.GetFor(types.NamespacedName{Namespace: "ns", Name: "other"}, "old"); ok {
		t.Error("GetFor a name never probed: a verdict; want none")
	}
	if _, ok := tr.Get(key); !ok {
		t.Error("Get the name: none; want its last verdict")
	}
}
