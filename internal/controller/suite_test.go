package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
)

// The integration tier: a real kube-apiserver and etcd from bin/, the CRDs
// from config/crd/bases, and the operator's real manager.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	// Stop the API server and etcd on every path out, os.Exit skips defers.
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()

	controller.RestConfig = cfg
	k8s, err = client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The platform's HA ClusterRole, as config/rbac and the chart ship it.
	haRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: resources.DefaultHAClusterRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: resources.HAConfigMapVerbs()}}}
	if err := k8s.Create(context.Background(), haRole); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	opCfg := rest.CopyConfig(cfg)
	opCfg.QPS, opCfg.Burst = 200, 400
	opCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countWrites{rt} })
	opts, err := operator.Defaults()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	// No health round during the run: envtest has no Flink, so each round's
	// probe of a ready cluster fails its REST level and writes a Warning
	// Event (and, past the threshold, a status). A round every 30s landed
	// inside the zero-write windows of whichever test ran then
	// (TestConvergedClusterCostsZeroWrites, TestUserHAAccountIsReviewed:
	// "cost 1 writes"). Reconciles still probe a cluster on their own
	// (Reconciler.healthVerdict); internal/health tests the rounds.
	opts.ReconcileInterval = time.Hour
	// The platform's shared storage, as a platform team sets it once.
	opts.StateStorageURI = itStateStorage
	mgr, err := operator.NewManager(opCfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

// itStateStorage is the integration tier's platform storage.
const itStateStorage = "s3://it-state/flink"

// countWrites counts every non-read request the operator makes by the
// namespace it concerns, so a test counts its own cluster's
// writes whatever the clusters of earlier tests still do; and its reads of
// single ConfigMaps.
type countWrites struct{ next http.RoundTripper }

func (c countWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet:
		if ns, rest, ok := strings.Cut(strings.TrimPrefix(req.URL.Path, "/api/v1/namespaces/"), "/configmaps/"); ok && rest != "" && req.URL.Query().Get("watch") == "" {
			n, _ := configMapReads.LoadOrStore(ns, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
	case http.MethodHead, http.MethodOptions:
	default:
		ns, err := writeNamespace(req)
		if err != nil {
			return nil, err
		}
		n, _ := writesByNamespace.LoadOrStore(ns, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if req.Method == http.MethodPost {
			createTypes.Store(ns+" "+path.Base(req.URL.Path), req.Header.Get("Content-Type"))
		}
	}
	return c.next.RoundTrip(req)
}

// createTypes maps "<namespace> <resource>" to the Content-Type of the
// operator's last create of that resource there.
var createTypes sync.Map

// writesByNamespace maps a namespace to its *atomic.Int64 write count.
var writesByNamespace sync.Map

// configMapReads maps a namespace to the operator's GETs of one of its
// ConfigMaps (around the cache, which holds them as metadata only).
var configMapReads sync.Map

// writeNamespace is the namespace in a request's path or, for a
// (cluster-scoped) SubjectAccessReview, the namespace it asks about.
func writeNamespace(req *http.Request) (string, error) {
	if _, rest, ok := strings.Cut(req.URL.Path, "/namespaces/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns, nil
	}
	if !strings.HasSuffix(req.URL.Path, "/subjectaccessreviews") || req.Body == nil {
		return "", nil
	}
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return "", err
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	var sar authorizationv1.SubjectAccessReview
	if json.Unmarshal(raw, &sar) != nil || sar.Spec.ResourceAttributes == nil {
		return "", nil
	}
	return sar.Spec.ResourceAttributes.Namespace, nil
}

// writesIn is the operator's write count for namespace ns so far.
func writesIn(ns string) int64 {
	if n, ok := writesByNamespace.Load(ns); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}
