package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
)

func TestFreshness(t *testing.T) {
	at := func(rv string) client.Object {
		return &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fc", ResourceVersion: rv}}
	}
	type write struct{ read, written string }
	for _, tc := range []struct {
		name   string
		writes []write
		// reads are the cached versions seen next, in order, and whether
		// each is stale.
		reads []string
		stale []bool
	}{
		{"no write", nil, []string{"5"}, []bool{false}},
		{"cache behind one write", []write{{"5", "6"}}, []string{"5", "5", "6", "5"}, []bool{true, true, false, false}},
		{"cache beyond, by another writer", []write{{"5", "6"}}, []string{"9"}, []bool{false}},
		{"two writes in one reconcile", []write{{"5", "6"}, {"6", "7"}}, []string{"5", "6", "7"}, []bool{true, true, false}},
		// The server found the status unchanged: the version stays, and
		// waiting for another would never end.
		{"no-op write", []write{{"5", "5"}}, []string{"5"}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f freshness
			for _, w := range tc.writes {
				f.wrote(at(w.read), w.read, w.written)
			}
			for i, rv := range tc.reads {
				if got := f.stale(at(rv)); got != tc.stale[i] {
					t.Errorf("read %d (version %s): stale = %v, want %v", i, rv, got, tc.stale[i])
				}
			}
		})
	}
}

// TestKeepEncoding: the spec as the API server returns it (keys sorted)
// is kept when it says the same, so an unchanged status is not rewritten.
func TestKeepEncoding(t *testing.T) {
	spec := &v1.FlinkClusterSpec{Version: "1.17.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2}}
	sorted := &runtime.RawExtension{Raw: []byte(`{"jobManager":{"replicas":1},"taskManager":{"replicas":2,"slots":2},"version":"1.17.1"}`)}
	if got := keepEncoding(sorted, spec); got != sorted {
		t.Errorf("an equal spec was re-encoded as %s", got.Raw)
	}
	changed := spec.DeepCopy()
	changed.Version = "1.18.1"
	if got := keepEncoding(sorted, changed); got == sorted || !strings.Contains(string(got.Raw), `"1.18.1"`) {
		t.Errorf("a changed spec kept the old encoding: %s", got.Raw)
	}
	if got := keepEncoding(nil, spec); got == nil {
		t.Error("no encoding for a first record")
	}
}
