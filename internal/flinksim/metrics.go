package flinksim

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// The metric REST handlers read a JobManager's MetricStore, which its
// MetricFetcher fills from the metric query services of the JobManager
// and the TaskManagers. MetricFetcherImpl#update fetches at most once per
// metrics.fetcher.update-interval, asynchronously: the request that finds
// the store too old still reads the old one, so the first request a
// JobManager answers has no metrics, and every later one sees them as
// they were up to one interval ago.

// metricStore is MetricStore: per job its JobManager-side metrics and,
// per vertex, each subtask's (ComponentMetricStore of the subtask).
type metricStore struct {
	jobs map[string]*jobMetricStore
}

type jobMetricStore struct {
	metrics map[string]string
	// tasks are the vertices' subtask stores by vertex ID.
	tasks map[string][]map[string]string
}

// fetchedStore is MetricFetcherImpl#update on the receiving JobManager:
// the store as it is, refreshed afterwards when older than the interval
// (currentTime - lastUpdateTime > updateInterval). An interval of 0 is
// the VoidMetricFetcher, whose store stays empty.
func (e *Engine) fetchedStore(c *cluster, jm *process, now time.Time) *metricStore {
	old := jm.metrics
	if jm.metricsInterval == 0 {
		return &metricStore{jobs: map[string]*jobMetricStore{}}
	}
	if jm.metricsFetched.IsZero() || now.Sub(jm.metricsFetched) > jm.metricsInterval {
		jm.metricsFetched = now
		jm.metrics = e.dumpMetrics(c, jm, now)
	}
	if old == nil {
		return &metricStore{jobs: map[string]*jobMetricStore{}}
	}
	return old
}

// dumpMetrics is what the metric query services report now: the
// JobManager's job metrics (JobManagerJobMetricGroup) of every job its
// leader's Dispatcher runs, and the task and operator metrics of every
// running task (TaskIOMetricGroup, OperatorIOMetricGroup), their names
// filtered by MetricQueryService#replaceInvalidChars.
func (e *Engine) dumpMetrics(c *cluster, jm *process, now time.Time) *metricStore {
	out := &metricStore{jobs: map[string]*jobMetricStore{}}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return out
	}
	var second int64
	var backlog float64
	if c.workload != nil {
		second, backlog = int64(c.workload.clock), c.workload.backlog
	}
	consumer := c.consumer()
	for _, id := range d.order {
		j := d.jobs[id]
		if j.state.Terminal() || !j.hasGraph() {
			continue
		}
		js := &jobMetricStore{metrics: j.jobMetrics(now), tasks: map[string][]map[string]string{}}
		out.jobs[j.id] = js
		if !j.runningTasks() {
			continue
		}
		for i, v := range j.vertices {
			w, ok := v.window(second)
			measured := c.workload != nil
			subs := make([]map[string]string, v.parallelism)
			hot := 0.0
			if c.workload != nil && i < len(c.workload.w.Vertices) {
				hot = hotShare(c.workload.w.Vertices[i].Skew, v.parallelism)
			} else {
				hot = hotShare(0, v.parallelism)
			}
			head := filterName(strings.Split(v.name, " -> ")[0])
			for s := range subs {
				share, busyMs, bpMs := hot, w.busyHot, w.bpHot
				if s > 0 {
					share, busyMs, bpMs = (1-hot)/float64(max(1, v.parallelism-1)), w.busyOther, w.bpOther
				}
				// TimerGauge#getValue is a long, the window's total time
				// divided by its span in integer arithmetic; busy time is
				// TaskIOMetricGroup#getBusyTimePerSecond, the double
				// 1000.0 - min(idle + back-pressured, 1000.0).
				idle, bp := int64(math.Max(0, 1000-busyMs-bpMs)), int64(bpMs)
				switch {
				case !measured:
					// No traffic at all: the tasks wait for input.
					idle, bp = 1000, 0
				case !ok:
					// TimerGauges not yet updated read 0, so busy time
					// reads 1000.
					idle, bp = 0, 0
				}
				busyTime := 1000 - math.Min(float64(idle+bp), 1000)
				in, outRate := w.in*share, w.out*share
				legacy := i == 0 && c.workload != nil && c.workload.w.legacySource()
				if legacy {
					// A SourceFunction's task reads no input: its
					// numRecordsIn (task and operator) stays 0
					// (SourceStreamTask, StreamSource).
					in = 0
				}
				m := map[string]string{
					"busyTimeMsPerSecond":            javaDouble(busyTime),
					"idleTimeMsPerSecond":            strconv.FormatInt(idle, 10),
					"backPressuredTimeMsPerSecond":   strconv.FormatInt(bp, 10),
					"numRecordsInPerSecond":          javaDouble(in),
					"numRecordsOutPerSecond":         javaDouble(outRate),
					head + ".numRecordsInPerSecond":  javaDouble(in),
					head + ".numRecordsOutPerSecond": javaDouble(outRate),
				}
				if i == 0 && j == consumer && measured && !legacy && v.consumed {
					// The source reader's pendingRecords gauge: its
					// splits' share of the backlog (FLIP-33), registered
					// once the reader has fetched records
					// (KafkaSourceReaderMetrics#maybeAddRecordsLagMetric).
					m[head+".pendingRecords"] = strconv.FormatInt(int64(math.Round(backlog/float64(v.parallelism))), 10)
				}
				subs[s] = m
			}
			js.tasks[v.id] = subs
		}
	}
	return out
}

// jobMetrics are a job's JobManager-side metrics, the gauges
// SchedulerBase#registerJobMetrics registers on its JobManagerJobMetricGroup:
// uptime, downtime and numRestarts.
func (j *job) jobMetrics(now time.Time) map[string]string {
	uptime, downtime := int64(0), int64(0)
	if j.state == flink.JobRunning {
		uptime = now.Sub(j.timestamps[flink.JobRunning]).Milliseconds()
	} else if j.state == flink.JobRestarting || j.state == flink.JobFailing {
		downtime = now.Sub(j.timestamps[j.state]).Milliseconds()
	}
	last := int64(-1)
	if j.latestCompleted != nil {
		last = j.latestCompleted.EndToEndDuration
	}
	return map[string]string{
		"numRestarts":                   strconv.Itoa(j.numRestarts),
		"uptime":                        strconv.FormatInt(uptime, 10),
		"downtime":                      strconv.FormatInt(downtime, 10),
		"numberOfCompletedCheckpoints":  strconv.FormatInt(j.completedCount, 10),
		"numberOfFailedCheckpoints":     strconv.FormatInt(j.failedCount, 10),
		"numberOfInProgressCheckpoints": strconv.Itoa(len(j.pending)),
		"lastCheckpointDuration":        strconv.FormatInt(last, 10),
	}
}

// filterName is MetricQueryService#replaceInvalidChars: space, '.', ':'
// and ',' become '_'.
func filterName(s string) string {
	return strings.NewReplacer(" ", "_", ".", "_", ":", "_", ",", "_").Replace(s)
}

// javaDouble prints a double as Java's String.valueOf does, which is how
// the metric dump carries meters and double gauges.
func javaDouble(v float64) string {
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e7:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1e-3 && a < 1e7:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	m := strconv.FormatFloat(v, 'E', -1, 64)
	mant, exp, _ := strings.Cut(m, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if neg {
		exp = "-" + exp
	}
	return mant + "E" + exp
}

// metricValue is one entry of a MetricCollectionResponseBody, which Flink
// serializes as a bare JSON array (MetricCollectionResponseBody.
// Serializer), not as the object the generated schema shows.
type metricValue struct {
	ID    string  `json:"id"`
	Value *string `json:"value,omitempty"`
}

// collection is AbstractMetricsHandler: without get, the available
// metric names; with get, the requested ones that exist. A store that
// does not exist (an unknown job or vertex) is an empty list.
func collection(store map[string]string, get string) []metricValue {
	out := []metricValue{}
	if store == nil {
		return out
	}
	if get == "" {
		for _, k := range sortedKeys(store) {
			out = append(out, metricValue{ID: k})
		}
		return out
	}
	for _, k := range strings.Split(get, ",") {
		k = strings.TrimSpace(k)
		if v, ok := store[k]; ok {
			out = append(out, metricValue{ID: k, Value: &v})
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jobMetricsREST answers GET /jobs/{jobid}/metrics as JobMetricsHandler
// (AbstractMetricsHandler#handleRequest) does, from the MetricStore.
func (e *Engine) jobMetricsREST(t target, jobID, get string) (out []metricValue, err error) {
	err = e.request(t, "GET /jobs/{jobid}/metrics", func(c *cluster, jm *process, now time.Time) error {
		id, err := pathID("jobid", jobID)
		if err != nil {
			return err
		}
		if _, err := c.dispatcherFor(jm); err != nil {
			return err
		}
		var store map[string]string
		if js := e.fetchedStore(c, jm, now).jobs[id]; js != nil {
			store = js.metrics
		}
		out = collection(store, get)
		return nil
	})
	return out, err
}

// vertexMetricsREST answers GET /jobs/{jobid}/vertices/{vertexid}/metrics:
// the TaskMetricStore, whose names carry the subtask index
// ("0.numRecordsInPerSecond", "0.Source__orders.pendingRecords").
func (e *Engine) vertexMetricsREST(t target, jobID, vertexID, get string) (out []metricValue, err error) {
	err = e.request(t, "GET /jobs/{jobid}/vertices/{vertexid}/metrics", func(c *cluster, jm *process, now time.Time) error {
		id, err := pathID("jobid", jobID)
		if err != nil {
			return err
		}
		vid, err := pathID("vertexid", vertexID)
		if err != nil {
			return err
		}
		if _, err := c.dispatcherFor(jm); err != nil {
			return err
		}
		var store map[string]string
		if js := e.fetchedStore(c, jm, now).jobs[id]; js != nil && js.tasks[vid] != nil {
			store = map[string]string{}
			for i, sub := range js.tasks[vid] {
				for k, v := range sub {
					store[strconv.Itoa(i)+"."+k] = v
				}
			}
		}
		out = collection(store, get)
		return nil
	})
	return out, err
}

// aggregatedMetric is AggregatedMetric: the aggregations asked for, the
// others left out (@JsonInclude NON_NULL).
type aggregatedMetric struct {
	ID   string   `json:"id"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
	Avg  *float64 `json:"avg,omitempty"`
	Sum  *float64 `json:"sum,omitempty"`
	Skew *float64 `json:"skew,omitempty"`
}

// aggregatedSubtaskMetrics answers GET /jobs/{jobid}/vertices/{vertexid}/
// subtasks/metrics (AbstractAggregatingMetricsHandler): without get, the
// names any subtask has; with get, each metric aggregated over the
// selected subtasks, and if any requested metric has no value at all the
// whole answer is an empty list. agg defaults to every mode the minor has
// (SKEW from 1.20).
func (e *Engine) aggregatedSubtaskMetrics(t target, jobID, vertexID string, q map[string]string) (out []aggregatedMetric, err error) {
	err = e.request(t, "GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics", func(c *cluster, jm *process, now time.Time) error {
		id, err := pathID("jobid", jobID)
		if err != nil {
			return err
		}
		vid, err := pathID("vertexid", vertexID)
		if err != nil {
			return err
		}
		modes := []string{"MIN", "MAX", "AVG", "SUM"}
		if jm.version.AtLeast(1, 20) {
			modes = append(modes, "SKEW")
		}
		want := modes
		if a := q["agg"]; a != "" {
			want = nil
			for _, m := range strings.Split(a, ",") {
				m = strings.ToUpper(strings.TrimSpace(m))
				if !slices.Contains(modes, m) {
					return handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (agg) from value \"%s\".", a)
				}
				want = append(want, m)
			}
		}
		var selected []int
		if s := q["subtasks"]; s != "" {
			if selected, err = parseRanges(s); err != nil {
				return handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (subtasks) from value \"%s\".", s)
			}
		}
		if _, err := c.dispatcherFor(jm); err != nil {
			return err
		}
		var stores []map[string]string
		if js := e.fetchedStore(c, jm, now).jobs[id]; js != nil {
			for i, sub := range js.tasks[vid] {
				if selected == nil || slices.Contains(selected, i) {
					stores = append(stores, sub)
				}
			}
		}
		out = []aggregatedMetric{}
		get := q["get"]
		if get == "" {
			seen := map[string]string{}
			for _, s := range stores {
				for k := range s {
					seen[k] = ""
				}
			}
			for _, k := range sortedKeys(seen) {
				out = append(out, aggregatedMetric{ID: k})
			}
			return nil
		}
		for _, name := range strings.Split(get, ",") {
			name = strings.TrimSpace(name)
			var values []float64
			numeric := true
			for _, s := range stores {
				if v, ok := s[name]; ok {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						numeric = false
						break
					}
					values = append(values, f)
				}
			}
			if !numeric {
				// Not numeric, so it cannot be aggregated: left out
				// (NumberFormatException → continue), the others kept.
				continue
			}
			if len(values) == 0 {
				out = []aggregatedMetric{}
				return nil
			}
			out = append(out, aggregate(name, values, want))
		}
		return nil
	})
	return out, err
}

// aggregate is the DoubleAccumulators; skew is DoubleDataSkew, the mean
// absolute deviation as a percentage of the mean, at most 100.
func aggregate(name string, values []float64, modes []string) aggregatedMetric {
	minV, maxV, sum := values[0], values[0], 0.0
	for _, v := range values {
		minV, maxV, sum = math.Min(minV, v), math.Max(maxV, v), sum+v
	}
	avg := sum / float64(len(values))
	skew := 0.0
	if avg != 0 {
		dev := 0.0
		for _, v := range values {
			dev += math.Abs(avg - v)
		}
		skew = math.Min(dev/float64(len(values))/avg*100, 100)
	}
	out := aggregatedMetric{ID: name}
	for _, m := range modes {
		switch m {
		case "MIN":
			out.Min = &minV
		case "MAX":
			out.Max = &maxV
		case "AVG":
			out.Avg = &avg
		case "SUM":
			out.Sum = &sum
		case "SKEW":
			out.Skew = &skew
		}
	}
	return out
}

// parseRanges reads SubtasksFilterQueryParameter's "1,3,5-9".
func parseRanges(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// resourceRequirements is JobResourceRequirementsBody: per vertex ID its
// parallelism bounds.
type resourceRequirements map[string]struct {
	Parallelism struct {
		LowerBound int `json:"lowerBound"`
		UpperBound int `json:"upperBound"`
	} `json:"parallelism"`
}

// jobResourceRequirements answers GET /jobs/{jobid}/resource-requirements
// (Flink 1.18+): the AdaptiveScheduler's bounds (AdaptiveScheduler#
// requestJobResourceRequirements: each vertex's min parallelism and
// parallelism). The DefaultScheduler does not override SchedulerNG's
// default, which throws UnsupportedOperationException: a 500.
func (e *Engine) jobResourceRequirements(t target, jobID string) (out resourceRequirements, err error) {
	err = e.request(t, "GET /jobs/{jobid}/resource-requirements", func(c *cluster, jm *process, now time.Time) error {
		j, err := e.gatewayJob(c, jm, jobID)
		if err != nil {
			return err
		}
		if j.adaptive == nil {
			return errDefaultScheduler
		}
		out = resourceRequirements{}
		for _, v := range j.vertices {
			r := out[v.id]
			r.Parallelism.LowerBound, r.Parallelism.UpperBound = v.lower, v.upper
			out[v.id] = r
		}
		return nil
	})
	return out, err
}

// updateJobResourceRequirements answers PUT /jobs/{jobid}/resource-
// requirements (Flink 1.18+): JobMaster#updateJobResourceRequirements
// validates the bounds (JobResourceRequirements#validate: every vertex,
// no other, -1 for a default, 1 ≤ lower ≤ upper ≤ max parallelism), then
// the scheduler takes them: the AdaptiveScheduler rescales (see
// maybeRescale); the DefaultScheduler cannot.
func (e *Engine) updateJobResourceRequirements(t target, jobID string, req resourceRequirements) error {
	return e.request(t, "PUT /jobs/{jobid}/resource-requirements", func(c *cluster, jm *process, now time.Time) error {
		j, err := e.gatewayJob(c, jm, jobID)
		if err != nil {
			return err
		}
		var errs []string
		for vid, r := range req {
			v := j.vertex(strings.ToLower(vid))
			if v == nil {
				errs = append(errs, "Job vertex ["+vid+"] was not found in the JobGraph.")
				continue
			}
			lo, hi := r.Parallelism.LowerBound, r.Parallelism.UpperBound
			if lo == -1 {
				lo = 1
			}
			if hi == -1 {
				hi = v.maxParallelism
			}
			switch {
			case lo < 1 || hi < 1:
				errs = append(errs, "Both, the requested lower bound ["+strconv.Itoa(lo)+"] and upper bound ["+strconv.Itoa(hi)+"] for job vertex ["+v.id+"] must be greater than zero.")
				continue
			case lo > hi:
				errs = append(errs, "The requested lower bound ["+strconv.Itoa(lo)+"] for job vertex ["+v.id+"] is higher than the upper bound ["+strconv.Itoa(hi)+"].")
			}
			if hi > v.maxParallelism {
				errs = append(errs, "The newly requested parallelism "+strconv.Itoa(hi)+" for the job vertex "+v.id+" exceeds its maximum parallelism "+strconv.Itoa(v.maxParallelism)+".")
			}
		}
		for _, v := range j.vertices {
			if _, ok := req[v.id]; !ok {
				errs = append(errs, "The request is incomplete, missing job vertex ["+v.id+"] resource requirements.")
			}
		}
		if len(errs) > 0 {
			// Dispatcher#validateMaxParallelism joins them by line.
			return handlerErr(http.StatusBadRequest, "%s", strings.Join(errs, "\n"))
		}
		bounds := map[string][2]int{}
		for vid, r := range req {
			v := j.vertex(strings.ToLower(vid))
			lo, hi := r.Parallelism.LowerBound, r.Parallelism.UpperBound
			if lo == -1 {
				lo = 1
			}
			if hi == -1 {
				hi = v.maxParallelism
			}
			bounds[v.id] = [2]int{lo, hi}
		}
		// Dispatcher#updateJobResourceRequirements persists them before the
		// JobMaster takes them (JobGraphWriter#putJobResourceRequirements):
		// with high availability into the job graph in the store, which a
		// recovering leader reads back; without it, NoOpJobGraphWriter
		// keeps nothing. The DefaultScheduler refuses them only after.
		if hj := j.haJob(); hj != nil {
			hj.requirements = bounds
		}
		if j.adaptive == nil {
			return errDefaultScheduler
		}
		changed := false
		for id, b := range bounds {
			v := j.vertex(id)
			changed = changed || v.lower != b[0] || v.upper != b[1]
			v.lower, v.upper = b[0], b[1]
		}
		if changed {
			j.requirementsChanged = true
			c.logf(now, "job %s: new resource requirements", j.id)
		}
		return nil
	})
}

// errDefaultScheduler is SchedulerNG's default requestJobResourceRequirements
// and updateJobResourceRequirements, which the DefaultScheduler keeps.
var errDefaultScheduler = restErr(http.StatusInternalServerError, "java.lang.UnsupportedOperationException", "The DefaultScheduler does not support changing the parallelism without a job restart. This feature is currently only expected to work with the AdaptiveScheduler.")

// gatewayJob is the running job a JobMaster operation addresses; one the
// Dispatcher does not run is a NotFoundException (Dispatcher#getJobMasterGateway).
func (e *Engine) gatewayJob(c *cluster, jm *process, jobID string) (*job, error) {
	id, err := pathID("jobid", jobID)
	if err != nil {
		return nil, err
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return nil, err
	}
	j, why := d.gateway(id)
	if j == nil {
		return nil, restErr(http.StatusNotFound, "org.apache.flink.runtime.rest.NotFoundException", "Job %s not found\nCaused by: %s", id, why)
	}
	return j, nil
}
