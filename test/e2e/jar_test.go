package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// countingServer answers every request with h on a listener at addr and
// counts the requests.
func countingServer(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n := &atomic.Int64{}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, n
}

// TestRefusedJarURIs: a jarURI at the cloud metadata address, at a
// loopback address the operator was not told to allow, or of a jar twice
// the chart's 256 Mi memory limit is refused: JobSubmitted=False with
// reason JarRefused saying why, one JarRefused event, nothing fetched from
// the refused addresses, the oversized jar asked for once and never read
// when it declares its length, read to the limit and no further when not
// (TestOversizedJarIsRefusedWhileStreaming shows the heap stays flat).
// The operator does not try again while the spec stays (its lifecycle
// polls Flink for the job meanwhile), and tries a changed jarURI, which
// runs and clears the condition.
func TestRefusedJarURIs(t *testing.T) {
	parallel(t)
	// The e2e operator allows 127.0.0.1 (the jar server); 127.0.0.2 is
	// loopback too, and not allowed.
	loopback, loopbackHits := countingServer(t, "127.0.0.2:0", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("PK\x03\x04"))
	})
	fat, fatHits := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(512<<20))
		w.WriteHeader(http.StatusOK)
		// The operator refuses by the declared length; a body it read
		// would be written here until it hung up.
		zeros := make([]byte, 64<<10)
		for i := 0; i < 512<<20/len(zeros); i++ {
			if _, err := w.Write(zeros); err != nil {
				return
			}
		}
	})
	// Twice the limit again, without a Content-Length: streamed to the
	// JobManager until the limit, then the upload fails.
	var streamed atomic.Int64
	endless, endlessHits := countingServer(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		zeros := make([]byte, 64<<10)
		for streamed.Load() < 512<<20 {
			n, err := w.Write(zeros)
			streamed.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	for _, tc := range []struct {
		name, uri, why string
		hits           *atomic.Int64
		wantHits       int64
	}{
		{"metadata", "http://169.254.169.254/latest/meta-data/job.jar", "169.254.169.254 is a link-local address", nil, 0},
		{"loopback", loopback.URL + "/job.jar", "127.0.0.2 is a loopback address", loopbackHits, 0},
		{"fat", fat.URL + "/fat.jar", "larger than 128 MiB", fatHits, 1},
		{"streamed", endless.URL + "/fat.jar", "larger than 128 MiB", endlessHits, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parallel(t)
			ns := newNamespace(t)
			fc := jobCluster(ns, tc.name)
			fc.Spec.Job.JarURI = tc.uri
			if err := k8s.Create(context.Background(), fc); err != nil {
				t.Fatal(err)
			}
			var cond *metav1.Condition
			eventually(t, 2*time.Minute, "JobSubmitted=False, JarRefused", func() error {
				fc = getFC(t, ns, tc.name)
				cond = meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionJobSubmitted)
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1.ReasonJarRefused {
					return fmt.Errorf("JobSubmitted is %+v", cond)
				}
				return nil
			})
			if !strings.Contains(cond.Message, tc.why) || !strings.Contains(cond.Message, tc.uri) || cond.ObservedGeneration != fc.Generation {
				t.Errorf("JobSubmitted: %+v, want the URI and %q, for generation %d", cond, tc.why, fc.Generation)
			}
			// Three more looks at Flink for the job: three chances to
			// fetch again, none taken.
			waitRequests(t, simKey(ns, tc.name), "GET /jobs/{jobid}", 3)
			if tc.hits != nil {
				if got := tc.hits.Load(); got != tc.wantHits {
					t.Errorf("The jar's server had %d requests, want %d", got, tc.wantHits)
				}
			}
			if sent := streamed.Load(); tc.name == "streamed" && (sent < 128<<20 || sent > 144<<20) {
				t.Errorf("The operator read %d MiB of a jar over its 128 MiB limit", sent>>20)
			}
			if n := jarRefusedEvents(t, ns, tc.name); n != 1 {
				t.Errorf("%d JarRefused events (counting repeats), want 1", n)
			}

			// A new jarURI is a new spec: fetched, run, the refusal gone.
			patchSpec(t, ns, tc.name, func(fc *v1.FlinkCluster) { fc.Spec.Job.JarURI = jarServer.URL + "/wordcount.jar" })
			eventually(t, 2*time.Minute, "the new jar running", func() error {
				fc := getFC(t, ns, tc.name)
				if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionJobSubmitted); c != nil {
					return fmt.Errorf("JobSubmitted still %+v", c)
				}
				if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) {
					return fmt.Errorf("job %+v", fc.Status.Job)
				}
				return nil
			})
		})
	}
}

// jarRefusedEvents counts the JarRefused events of a cluster, each with
// its repeats.
func jarRefusedEvents(t *testing.T, ns, name string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Reason == v1.ReasonJarRefused && e.Regarding.Name == name {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}
