package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAPILags: per cluster, the last pod status write of the node agent to
// the operator's first status write after it; other namespaces, other
// writers, writes after the end and clusters not yet written are left out.
func TestAPILags(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 16, 0, 0, 0, time.UTC)
	line := func(agent, ns, resource, sub, name string, ms int) string {
		at := t0.Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00")
		return fmt.Sprintf(`{"verb":"patch","userAgent":%q,"objectRef":{"resource":%q,"subresource":%q,"namespace":%q,"name":%q},"stageTimestamp":%q}`,
			agent, resource, sub, ns, name, at)
	}
	kwok, op := "kwok/v0.8.0", "datapilot/v0.1.0"
	log := []string{
		line(kwok, "ns", "pods", "status", "fc-0001-jobmanager-7d9f-x2x", 100),
		line(kwok, "ns", "pods", "status", "fc-0001-taskmanager-0", 300),
		line(kwok, "ns", "pods", "status", "fc-0001-taskmanager-1", 200),
		line(op, "ns", "flinkclusters", "status", "fc-0001", 250), // before the last pod: not it
		line(op, "ns", "flinkclusters", "status", "fc-0001", 1300),
		line(op, "ns", "flinkclusters", "status", "fc-0001", 2000),
		line(kwok, "ns", "pods", "status", "fc-0002-taskmanager-0", 100),
		line(op, "ns", "flinkclusters", "status", "fc-0002", 600),
		line("kube-controller-manager/v1", "ns", "deployments", "status", "fc-0002-jobmanager", 650),
		line(kwok, "ns", "pods", "status", "fc-0003-taskmanager-0", 100),                 // never written by the operator
		line("spotify-operator/v0.0.0", "ns", "flinkclusters", "status", "fc-0003", 400), // by the peer
		line(kwok, "other", "pods", "status", "fc-0001-taskmanager-0", 100),
		line(op, "other", "flinkclusters", "status", "fc-0001", 150),
		line(kwok, "ns", "pods", "status", "fc-0004-taskmanager-0", 100),
		line(op, "ns", "flinkclusters", "status", "fc-0004", 9000), // after the end
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(log, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := apiLags(path, operatorAgent, "ns", t0.Add(5*time.Second))
	want := []time.Duration{500 * time.Millisecond, time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("apiLags = %v, want %v", got, want)
	}
	if got, want := apiLags(path, peerAgent, "ns", t0.Add(5*time.Second)), []time.Duration{300 * time.Millisecond}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("apiLags of the peer = %v, want %v", got, want)
	}
}

// TestInstanceOf: a pod or workload belongs to the cluster Datapilot's
// instance label names, or else the Spotify operator's "cluster" label.
func TestInstanceOf(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"app.kubernetes.io/instance": "fc-0001", "cluster": "other"}, "fc-0001"},
		{map[string]string{"cluster": "fc-0002", "app": "flink", "component": "jobmanager"}, "fc-0002"},
		{map[string]string{"app": "flink"}, ""},
	} {
		if got := instanceOf(tc.labels); got != tc.want {
			t.Errorf("instanceOf(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func TestPromTextSum(t *testing.T) {
	p := promText{
		`datapilot_flink_rest_request_duration_seconds_count{endpoint="GET /jobs/overview"} 4`,
		`datapilot_flink_rest_request_duration_seconds_count{endpoint="GET /overview"} 2`,
		`datapilot_flink_rest_request_duration_seconds_sum{endpoint="GET /jobs/overview"} 0.002`,
		`datapilot_flink_rest_request_duration_seconds_sum{endpoint="GET /overview"} 0.001`,
		`controller_runtime_reconcile_total{controller="flinkcluster",result="success"} 7`,
		`controller_runtime_reconcile_total{controller="other",result="success"} 100`,
		`process_cpu_seconds_total 3.5`,
	}
	for _, tc := range []struct {
		name    string
		filters []string
		want    float64
	}{
		{"datapilot_flink_rest_request_duration_seconds_count", nil, 6},
		{"datapilot_flink_rest_request_duration_seconds_count", []string{`endpoint="GET /overview"`}, 2},
		{"controller_runtime_reconcile_total", []string{`controller="flinkcluster"`}, 7},
		{"process_cpu_seconds_total", nil, 3.5},
	} {
		if got := p.sum(tc.name, tc.filters...); got != tc.want {
			t.Errorf("sum(%s, %v) = %v, want %v", tc.name, tc.filters, got, tc.want)
		}
	}
	if got, want := p.mean("datapilot_flink_rest_request_duration_seconds"), 500*time.Microsecond; got != want {
		t.Errorf("mean = %v, want %v", got, want)
	}
}

// TestDeltaOf: a phase's counts per cluster and means are the differences
// of two scrapes; counters that went back (the operator restarted) or a
// missing scrape give nothing rather than a wrong figure.
func TestDeltaOf(t *testing.T) {
	scrapeOf := func(reconciles, requests, recSum, recCount, waitSum, waitCount float64) promText {
		return promText{
			fmt.Sprintf(`controller_runtime_reconcile_total{controller="flinkcluster",result="success"} %g`, reconciles),
			`controller_runtime_reconcile_total{controller="other",result="success"} 1000`,
			fmt.Sprintf(`datapilot_flink_rest_requests_total{endpoint="GET /overview",code="200"} %g`, requests),
			fmt.Sprintf(`controller_runtime_reconcile_time_seconds_sum{controller="flinkcluster"} %g`, recSum),
			fmt.Sprintf(`controller_runtime_reconcile_time_seconds_count{controller="flinkcluster"} %g`, recCount),
			fmt.Sprintf(`workqueue_queue_duration_seconds_sum{name="flinkcluster"} %g`, waitSum),
			fmt.Sprintf(`workqueue_queue_duration_seconds_count{name="flinkcluster"} %g`, waitCount),
		}
	}
	before := scrapeOf(100, 50, 10, 100, 20, 100)
	for _, tc := range []struct {
		name          string
		before, after promText
		n             int
		want          opDelta
	}{
		{"a phase", before, scrapeOf(500, 250, 30, 500, 420, 500), 100,
			opDelta{ok: true, reconciles: 4, flinkRequests: 2, reconcileMean: 50 * time.Millisecond, queueWaitMean: time.Second}},
		{"the operator restarted", before, scrapeOf(40, 10, 2, 40, 4, 40), 100, opDelta{}},
		{"no scrape before", nil, scrapeOf(500, 250, 30, 500, 420, 500), 100, opDelta{}},
		{"no clusters", before, scrapeOf(500, 250, 30, 500, 420, 500), 0, opDelta{}},
	} {
		if got := deltaOf(tc.before, tc.after, tc.n); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
