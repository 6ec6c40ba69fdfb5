package flinksim

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestMetricFetcherInterval: metrics.fetcher.update-interval is read when
// the JobManager starts (DefaultDispatcherResourceManagerComponentFactory
// #create): a Long of milliseconds before 1.20, so "10 s" does not start a
// 1.19 JobManager; a negative interval fails MetricFetcherImpl's
// precondition; 0 is the VoidMetricFetcher, which never has a metric.
func TestMetricFetcherInterval(t *testing.T) {
	for _, tc := range []struct {
		version, value, down string
	}{
		{"1.19.1", "10 s", "Could not parse value '10 s' for key 'metrics.fetcher.update-interval'"},
		{"1.19.1", "-1", "The update interval must be larger than 0."},
		{"1.20.1", "10 s", ""},
	} {
		t.Run(tc.version+" "+tc.value, func(t *testing.T) {
			e, _ := newTestEngine(t)
			sc := simple(tms(1), map[string]string{"metrics.fetcher.update-interval": tc.value})
			sc.Version, sc.Env = tc.version, s3Plugin(tc.version)
			e.Observe(key, sc.Observation())
			v, err := e.View(key)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.JobManagers[0].Down; tc.down == "" && got != "" || !strings.Contains(got, tc.down) {
				t.Errorf("JobManager down = %q, want %q", got, tc.down)
			}
		})
	}
	e, clk, _, _, srv := newHTTPTest(t, "1.19")
	e.Observe(key, simple(tms(1), map[string]string{"metrics.fetcher.update-interval": "0"}).Observation())
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 1})
	for range 3 {
		var jm []metricValue
		restGet(t, srv, "/jobs/"+id+"/metrics?get=numRestarts", &jm)
		if len(jm) != 0 {
			t.Fatalf("VoidMetricFetcher: %+v, want []", jm)
		}
		clk.step(20 * time.Second)
	}
}

// TestBusyTimeFromLongGauges: idle and back-pressured time are TimerGauge
// longs (integer division); busy time is 1000.0 minus their sum, so the
// three add up to 1000 and busy time is a whole number.
func TestBusyTimeFromLongGauges(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	w := pipeline(RateShape{Kind: "constant", Base: 1500})
	w.Vertices[1].Skew = 0.5
	if err := e.SetWorkload(key, w); err != nil {
		t.Fatal(err)
	}
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	clk.step(100 * time.Second)
	if _, err := e.View(key); err != nil { // steps the workload
		t.Fatal(err)
	}
	e.mu.Lock()
	c := e.clusters[key]
	s := e.dumpMetrics(c, c.jms[0], clk.now())
	e.mu.Unlock()
	for vid, subs := range s.jobs[id].tasks {
		for i, m := range subs {
			busy, err := strconv.ParseFloat(m["busyTimeMsPerSecond"], 64)
			idle, err2 := strconv.ParseInt(m["idleTimeMsPerSecond"], 10, 64)
			bp, err3 := strconv.ParseInt(m["backPressuredTimeMsPerSecond"], 10, 64)
			if err != nil || err2 != nil || err3 != nil {
				t.Fatalf("%s/%d: %v", vid, i, m)
			}
			if busy != float64(int64(busy)) || int64(busy)+idle+bp != 1000 {
				t.Errorf("%s/%d: busy %v + idle %d + back-pressured %d", vid, i, busy, idle, bp)
			}
		}
	}
}

// TestAggregationSkipsNonNumeric: AbstractAggregatingMetricsHandler
// leaves out a metric it cannot parse and keeps the others.
func TestAggregationSkipsNonNumeric(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.19")
	e.Observe(key, simple(tms(1), nil).Observation())
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 1})
	vid := jobDetails(t, e, id).Vertices[0].ID
	e.mu.Lock()
	jm := e.clusters[key].jms[0]
	jm.metricsFetched = clk.now()
	jm.metrics = &metricStore{jobs: map[string]*jobMetricStore{id: {
		tasks: map[string][]map[string]string{vid: {{"a": "1.0", "name": "x"}}},
	}}}
	e.mu.Unlock()
	var got aggregated
	restGet(t, srv, "/jobs/"+id+"/vertices/"+vid+"/subtasks/metrics?get=name,a", &got)
	if len(got) != 1 || got[0].ID != "a" {
		t.Errorf("got %+v, want only a", got)
	}
}

// TestResourceRequirementsReview: the Dispatcher joins validation errors
// by line; the DefaultScheduler answers GET with SchedulerNG's
// UnsupportedOperationException, as it does PUT.
func TestResourceRequirementsReview(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.19")
	sc := adaptive("1.19.1", 1)
	e.Observe(key, sc.Observation())
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	j := jobDetails(t, e, id)
	var er flink.ErrorResponse
	body := fmt.Sprintf(`{%q: {"parallelism": {"lowerBound": 300, "upperBound": 200}}}`, j.Vertices[0].ID)
	if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", body, &er); code != 400 || len(er.Errors) == 0 {
		t.Fatalf("PUT: HTTP %d %v", code, er)
	}
	msg := er.Errors[0]
	if !strings.Contains(msg, "is higher than the upper bound [200].\nThe newly requested parallelism 200") {
		t.Errorf("errors not joined by line: %q", msg)
	}

	e2, clk2, _, _, srv2 := newHTTPTest(t, "1.19")
	e2.Observe(key, simple(tms(1), nil).Observation())
	id2 := running(t, e2, clk2, flink.JarRunRequest{Parallelism: 1})
	var er2 flink.ErrorResponse
	if code := restDo(t, srv2, "GET", "/jobs/"+id2+"/resource-requirements", "", &er2); code != 500 || len(er2.Errors) == 0 {
		t.Fatalf("GET on the DefaultScheduler: HTTP %d %v, want 500", code, er2)
	}
}

// TestParallelismAboveMaxFailsInitialization: the submission is accepted;
// the JobMaster's ExecutionJobVertex refuses the parallelism, failing the
// job at initialization without a restart.
func TestParallelismAboveMaxFailsInitialization(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(2), map[string]string{"pipeline.max-parallelism": "2"}).Observation())
	id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
	clk.step(2 * time.Second)
	v := view(t, e, id)
	if v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "parallelism (4) is higher than the max parallelism (2)") {
		t.Errorf("job %s: %q", v.State, v.FailureCause)
	}
}

// TestAdaptiveStabilizationFromSufficient: WaitingForResources starts the
// stabilization timeout when the free slots become sufficient, not when
// the job starts waiting; the resource wait timeout runs the job with
// sufficient slots even inside the stabilization timeout, and fails it
// without them ("Not enough resources available for scheduling.").
func TestAdaptiveStabilizationFromSufficient(t *testing.T) {
	for _, version := range []string{"1.19.1", "2.0.0"} {
		t.Run(version, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, adaptive(version, 0).Observation())
			id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
			clk.step(20 * time.Second)
			e.Observe(key, adaptive(version, 1).Observation()) // 2 of 4 slots: sufficient
			clk.step(5 * time.Second)
			if s := jobState(t, e, id); s != flink.JobCreated {
				t.Fatalf("5 s after sufficient slots: %s, want CREATED", s)
			}
			clk.step(6 * time.Second)
			if j := jobDetails(t, e, id); j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[2]" {
				t.Fatalf("11 s after sufficient slots: %s %v", j.State, parallelisms(j))
			}
		})
	}
	t.Run("wait timeout", func(t *testing.T) {
		e, clk := newTestEngine(t)
		sc := adaptive("1.19.1", 1)
		sc.Settings["jobmanager.adaptive-scheduler.resource-stabilization-timeout"] = "60s"
		sc.Settings["jobmanager.adaptive-scheduler.resource-wait-timeout"] = "30s"
		e.Observe(key, sc.Observation())
		id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
		clk.step(33 * time.Second)
		if j := jobDetails(t, e, id); j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[2]" {
			t.Fatalf("after the wait timeout with sufficient slots: %s %v", j.State, parallelisms(j))
		}
		e2, clk2 := newTestEngine(t)
		e2.Observe(key, adaptive("1.19.1", 0).Observation())
		id2 := submit(t, e2, flink.JarRunRequest{Parallelism: 4})
		clk2.step(5*time.Minute + 2*time.Second)
		if v := view(t, e2, id2); v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "Not enough resources available for scheduling.") {
			t.Fatalf("after the wait timeout without slots: %s %q", v.State, v.FailureCause)
		}
	})
}

// TestAdaptiveRescaleController1x: on 1.x new requirements are not forced
// (Executing#maybeRescale asks EnforceMinimalIncreaseRescalingController,
// as for new slots), and within scaling-interval.min (1.19, 1.20) the
// rescale is looked at again scaling-interval.min after the event, not at
// the end of the interval.
func TestAdaptiveRescaleController1x(t *testing.T) {
	t.Run("min-parallelism-increase", func(t *testing.T) {
		e, clk, _, _, srv := newHTTPTest(t, "1.18")
		sc := adaptive("1.18.1", 2)
		sc.Settings["jobmanager.adaptive-scheduler.min-parallelism-increase"] = "3"
		e.Observe(key, sc.Observation())
		id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
		var er flink.ErrorResponse
		if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(jobDetails(t, e, id), 1, 4), &er); code != 200 {
			t.Fatalf("PUT: %d %v", code, er)
		}
		clk.step(60 * time.Second)
		if got := view(t, e, id).Rescales; got != 0 {
			t.Errorf("an increase of 2 with min-parallelism-increase 3 rescaled %d times", got)
		}
		// A decrease always rescales.
		if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(jobDetails(t, e, id), 1, 1), &er); code != 200 {
			t.Fatalf("PUT: %d %v", code, er)
		}
		clk.step(3 * time.Second)
		if j := jobDetails(t, e, id); view(t, e, id).Rescales != 1 || fmt.Sprint(parallelisms(j)) != "[1]" {
			t.Errorf("decrease: %v, %d rescales", parallelisms(j), view(t, e, id).Rescales)
		}
	})
	t.Run("scaling-interval.min from the event", func(t *testing.T) {
		e, clk := newTestEngine(t)
		e.Observe(key, adaptive("1.19.1", 1).Observation())
		id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
		clk.step(12 * time.Second) // runs with 2 after the stabilization timeout
		if j := jobDetails(t, e, id); j.State != flink.JobRunning {
			t.Fatalf("job %s", j.State)
		}
		clk.step(20 * time.Second)
		e.Observe(key, adaptive("1.19.1", 2).Observation()) // ~20 s into Executing
		clk.step(15 * time.Second)                          // past executing + 30 s
		if got := view(t, e, id).Rescales; got != 0 {
			t.Fatalf("rescaled %d times 15 s after the event", got)
		}
		clk.step(17 * time.Second)
		if got := view(t, e, id).Rescales; got != 1 {
			t.Fatalf("not rescaled 32 s after the event: %d", got)
		}
	})
}

// TestSkewCapped: DoubleDataSkew#getValue is min(avgDev / avg × 100, 100).
func TestSkewCapped(t *testing.T) {
	m := aggregate("x", []float64{0, 0, 0, 10}, []string{"SKEW"})
	if m.Skew == nil || *m.Skew != 100 {
		t.Errorf("skew = %v, want 100", m.Skew)
	}
	m = aggregate("x", []float64{1, 3}, []string{"SKEW"})
	if m.Skew == nil || *m.Skew != 50 {
		t.Errorf("skew = %v, want 50", m.Skew)
	}
}
