package health

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/resources"
)

func BenchmarkEvaluate(b *testing.B) {
	v, _ := Evaluate(Verdict{}, healthy, 3, time.Unix(0, 0))
	rounds := [][]Probe{healthy, rest503, healthy, jobsDown, jobsDown, jobsDown, healthy}
	i := 0
	for b.Loop() {
		v, _ = Evaluate(v, rounds[i%len(rounds)], 3, time.Unix(int64(i), 0))
		i++
	}
}

// staticReader serves a fixed set of FlinkClusters and JobManager
// StatefulSets (no older cluster's Deployment), for the
// benchmark only: it stands in for the manager's cache, which answers from
// memory too. Tests use a real API server.
type staticReader struct {
	clusters []v1.FlinkCluster
	jms      map[types.NamespacedName]*appsv1.StatefulSet
}

func (r *staticReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return apierrors.NewNotFound(appsv1.Resource("deployments"), key.Name)
	case *appsv1.StatefulSet:
		src, ok := r.jms[key]
		if !ok {
			return apierrors.NewNotFound(appsv1.Resource("statefulsets"), key.Name)
		}
		src.DeepCopyInto(o)
		return nil
	}
	return fmt.Errorf("staticReader: cannot get %T", obj)
}

func (r *staticReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1.FlinkClusterList)
	if !ok {
		return fmt.Errorf("staticReader: cannot list %T", list)
	}
	l.Items = make([]v1.FlinkCluster, len(r.clusters))
	for i := range r.clusters {
		r.clusters[i].DeepCopyInto(&l.Items[i])
	}
	return nil
}

// BenchmarkRound measures one health round over many clusters with a
// declared job each, against the Flink REST simulator over HTTP (three
// cached reads and two REST calls per cluster, Workers at once).
func BenchmarkRound(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			// A test clock: the simulator keeps a submitted job
			// INITIALIZING, then DEPLOYING, for a while, as Flink does;
			// the round measured is of jobs that run.
			now := time.Unix(0, 0)
			eng := flinksim.NewEngine(flinksim.EngineOptions{Clock: func() time.Time { return now }})
			srv := httptest.NewServer(flinksim.NewHandler(eng, logr.Discard()))
			defer srv.Close()
			r := &staticReader{jms: map[types.NamespacedName]*appsv1.StatefulSet{}}
			for i := range n {
				fc := v1.FlinkCluster{
					ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("c%04d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
					Spec: v1.FlinkClusterSpec{Version: "1.18.1", TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 1},
						Job: &v1.JobSpec{JarURI: "https://example.com/job.jar"}},
				}
				k := flinksim.ClusterKey{Namespace: fc.Namespace, Name: fc.Name}
				eng.Observe(k, flinksim.SimpleCluster{Version: "1.18.1", JobManager: "jm-" + fc.Name, TaskManagers: []string{"tm-" + fc.Name}}.Observation())
				up, err := eng.UploadJar(k, "job.jar")
				if err != nil {
					b.Fatal(err)
				}
				run, err := eng.RunJar(k, path.Base(up.Filename), flink.JarRunRequest{Parallelism: 1})
				if err != nil {
					b.Fatal(err)
				}
				fc.Status.Job = &v1.JobStatus{ID: run.JobID}
				r.clusters = append(r.clusters, fc)
				r.jms[types.NamespacedName{Namespace: fc.Namespace, Name: resources.JobManagerName(&fc)}] = &appsv1.StatefulSet{
					Status: appsv1.StatefulSetStatus{ReadyReplicas: 1},
				}
			}
			now = now.Add(time.Minute)
			notify := make(chan event.GenericEvent, n)
			p := &Poller{
				Reader:     r,
				Resolver:   flink.Resolver{Override: srv.URL + "/clusters/{namespace}/{name}"},
				HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: DefaultWorkers}},
				Tracker:    NewTracker(),
				Notify:     notify,
				// No spreading: measure the probing itself.
				Interval: time.Nanosecond,
			}
			ctx := context.Background()
			for b.Loop() {
				p.round(ctx)
				for len(notify) > 0 {
					<-notify
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "clusters/s")
			if v, ok := p.Tracker.Get(types.NamespacedName{Namespace: "bench", Name: "c0000"}); !ok || v.Degraded || v.Levels[LevelJobs].Status != T {
				b.Fatalf("verdict = %+v", v)
			}
		})
	}
}
