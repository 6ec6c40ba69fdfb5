package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
