package autopilot_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/autopilot"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// sampleAt steps the recorder's clock by d, then takes one sample with sm.
func (r *recorder) sampleAt(sm *autopilot.Sampler, d time.Duration) (autopilot.Sample, int) {
	r.t.Helper()
	r.clk.t = r.clk.t.Add(d)
	job, err := r.c.Job(context.Background(), r.job)
	if err != nil {
		r.t.Fatal(err)
	}
	s, n, err := sm.Sample(context.Background(), r.c, r.job, job.Vertices, r.clk.t)
	if err != nil {
		r.t.Fatal(err)
	}
	return s, n
}

func source(s autopilot.Sample) (autopilot.VertexSample, bool) {
	for _, v := range s.Vertices {
		if v.Name == "Source: orders" {
			return v, true
		}
	}
	return autopilot.VertexSample{}, false
}

// TestSamplerFindsALazyKafkaSource: Flink's KafkaSource registers
// pendingRecords only once its reader has fetched records
// (KafkaSourceReaderMetrics#maybeAddRecordsLagMetric), so the listing
// taken as the tasks start lacks it. A later sample still finds it.
func TestSamplerFindsALazyKafkaSource(t *testing.T) {
	r := record(t, chain(flinksim.RateShape{Kind: "constant", Base: 400}, 0), 2)
	var sm autopilot.Sampler
	r.sampleAt(&sm, 0)           // starts the MetricFetcher: an empty listing
	r.sampleAt(&sm, time.Second) // the tasks' first metrics: no pendingRecords yet
	for range 20 {
		s, _ := r.sampleAt(&sm, 5*time.Second)
		if v, ok := source(s); ok && v.Source && v.Lag > 0 {
			return
		}
	}
	t.Fatal("100 s of samples and the Kafka source's pendingRecords was never read")
}

// listings counts the metric-name listings a sampler sends, by poll.
type listings struct {
	autopilot.MetricsReader
	poll  int
	polls []int
}

func (l *listings) SubtaskMetricIDs(ctx context.Context, jobID, vertexID string) ([]string, error) {
	l.polls = append(l.polls, l.poll)
	return l.MetricsReader.SubtaskMetricIDs(ctx, jobID, vertexID)
}

// TestSamplerReadsALegacySource: a SourceFunction has no pendingRecords
// and counts no records in on its task; what it reads is its operator's
// numRecordsOutPerSecond (as the flink-kubernetes-operator's
// ScalingMetrics reads it). The job is sized from that, the condition
// says the backlog is unknown, and the listings that look for
// pendingRecords thin out to one in 8 samples.
func TestSamplerReadsALegacySource(t *testing.T) {
	w := chain(flinksim.RateShape{Kind: "constant", Base: 400}, 0)
	w.Source = flinksim.SourceLegacy
	r := record(t, w, 2)
	p := defaults()
	start := r.clk.t
	counted := &listings{MetricsReader: r.c}
	var h []autopilot.Sample
	var last autopilot.VertexSample
	for ; r.clk.t.Sub(start) < p.Stabilization+p.Window+time.Minute; counted.poll++ {
		r.clk.t = r.clk.t.Add(5 * time.Second)
		job, err := r.c.Job(context.Background(), r.job)
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := r.sampler.Sample(context.Background(), counted, r.job, job.Vertices, r.clk.t)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := source(s); ok {
			last = v
		}
		h = autopilot.Append(h, s, p.Window+p.Stabilization)
	}
	if !last.Source || last.LagKnown || last.RecordsIn != 0 {
		t.Fatalf("legacy source sampled as %+v, want a source with no lag and no task records in", last)
	}
	// Enrich's 2 subtasks of 100 records/s hold the source to 200.
	if last.Read < 190 || last.Read > 210 {
		t.Errorf("read rate %.1f, want about 200 (Source__orders.numRecordsOutPerSecond)", last.Read)
	}
	rec := autopilot.Evaluate(h, p, start.Add(p.Stabilization), r.clk.t)
	if rec.Kind != autopilot.Up || rec.Inputs.SourceRate < 190 {
		t.Fatalf("%s %d→%d %+v: %s", rec.Kind, rec.From, rec.To, rec.Inputs, rec.Message)
	}
	out := autopilot.Decide(autopilot.Input{Policy: p, Now: r.clk.t, Rec: rec})
	if !strings.Contains(out.Condition.Message, "the backlog of Source: orders is unknown") {
		t.Errorf("condition %q does not say the backlog is unknown", out.Condition.Message)
	}
	// Listed at the first poll (the MetricFetcher's empty answer), then
	// after 1, 2, 4 and every 8 samples.
	want := []int{0, 1, 2, 4}
	for next := 8; next < counted.poll; next += 8 {
		want = append(want, next)
	}
	if got := counted.polls; !slices.Equal(got, want) {
		t.Errorf("listings at polls %v, want %v", got, want)
	}
}
