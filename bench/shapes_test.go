package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Each shape differs from the operator's in the one child it names.
func TestShapesChangeOneChild(t *testing.T) {
	kinds := func(s shape) (out []string, serviceNames []string) {
		objs, err := s.children(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			raw, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					ServiceName string `json:"serviceName"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m.Kind+" "+m.Metadata.Name)
			if m.Kind == "StatefulSet" {
				serviceNames = append(serviceNames, m.Spec.ServiceName)
			}
		}
		return out, serviceNames
	}
	ref, _ := kinds(shapes[0])
	want := "ConfigMap fc-0000-config,Service fc-0000-jobmanager,StatefulSet fc-0000-jobmanager,StatefulSet fc-0000-taskmanager"
	if got := strings.Join(ref, ","); got != want {
		t.Fatalf("operator's shape:\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		s                 shape
		removed, added    string
		statefulSetServes []string
	}{
		{shape{jmDeployment: true}, "StatefulSet fc-0000-jobmanager", "Deployment fc-0000-jobmanager", []string{"fc-0000-taskmanager"}},
		{shape{budget: true}, "", "PodDisruptionBudget fc-0000-taskmanager", []string{"fc-0000-jobmanager", "fc-0000-taskmanager"}},
		{shape{tmService: true}, "", "Service fc-0000-taskmanager", []string{"fc-0000-jobmanager", "fc-0000-taskmanager"}},
		{shape{apply: true}, "", "", []string{"fc-0000-jobmanager", "fc-0000-taskmanager"}},
	} {
		got, services := kinds(tc.s)
		// The baseline creates the last once the pods are ready.
		if last := got[len(got)-1]; tc.s.lateChild() != (last == "PodDisruptionBudget fc-0000-taskmanager") {
			t.Errorf("%+v: last child %s, created late %v", tc.s, last, tc.s.lateChild())
		}
		wantKinds := slices.DeleteFunc(slices.Clone(ref), func(k string) bool { return k == tc.removed })
		if tc.added != "" {
			wantKinds = append(wantKinds, tc.added)
		}
		slices.Sort(got)
		slices.Sort(wantKinds)
		if !slices.Equal(got, wantKinds) {
			t.Errorf("%+v: children %v, want %v", tc.s, got, wantKinds)
		}
		if !slices.Equal(services, tc.statefulSetServes) {
			t.Errorf("%+v: StatefulSets governed by %q, want %q", tc.s, services, tc.statefulSetServes)
		}
	}
}
