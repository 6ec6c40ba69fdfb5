package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/datapilot/datapilot/internal/webhookcert"
)

// The peer is the Spotify operator (github.com/spotify/flink-on-k8s-operator),
// run on the same platform in the same run when -spotify names a checkout
// of its source: issue #24's absolute goal is "no slower than the Spotify
// operator on the same platform", and a figure from another day on another
// machine ranks nothing. The Go module proxy does not serve that module,
// so the bench cannot fetch it: it builds the checkout it is given (the
// dependencies do come from the proxy), creates the CRD from it, and
// registers its admission webhooks as its kustomize default does (its
// mutating webhook sets the defaults its controller needs). Nothing of its
// code is copied here: the bench runs its binary and reads one status
// field, `state`, which it sets to Running once its JobManager and
// TaskManager StatefulSets report their replicas ready and its JobManager
// Service has a cluster IP.
//
// It runs session clusters of the bench's shape (one JobManager, two
// TaskManagers), with as many concurrent reconciles as Datapilot, its log
// at error level as Datapilot's, and watching only its round's namespace,
// so it caches nothing of the other phases. It is started for its phase
// and stopped after it: its start is not measured, and it loads no other
// phase.

// peerAgent is the user agent client-go gives the peer: its binary's name.
const peerAgent = "spotify-operator/"

// peerWebhookPort is controller-runtime's default webhook port, which the
// peer's main does not change.
const peerWebhookPort = 9443

var peerGVK = schema.GroupVersionKind{Group: "flinkoperator.k8s.io", Version: "v1beta1", Kind: "FlinkCluster"}

func peerNS(round int) string { return fmt.Sprintf("bench-spotify-%d", round) }

type peer struct {
	bin, kubeconfig, stateDir string
	// tmp is the peer's TMPDIR, where controller-runtime's webhook server
	// looks for its certificate.
	tmp string
}

// setupPeer builds the peer, creates its CRD and webhook configurations,
// and has watch record its clusters' state in namespaces.
func setupPeer(ctx context.Context, k8s client.Client, cfg *rest.Config, watch *readiness, src, stateDir, kubeconfig string, namespaces []string) (*peer, error) {
	p := &peer{bin: filepath.Join(stateDir, "spotify-operator"), kubeconfig: kubeconfig, stateDir: stateDir, tmp: filepath.Join(stateDir, "spotify-tmp")}
	fmt.Printf("Peer: building the Spotify operator from %s\n", src)
	build := exec.CommandContext(ctx, "go", "build", "-o", p.bin, ".")
	build.Dir = src
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the Spotify operator in %s: %w", src, err)
	}
	raw, err := os.ReadFile(filepath.Join(src, "config", "crd", "bases", "flinkoperator.k8s.io_flinkclusters.yaml"))
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return nil, fmt.Errorf("the Spotify operator's CRD: %w", err)
	}
	// As its kustomize default's crd_protection.yaml patch: a *.k8s.io
	// group needs the annotation.
	metav1.SetMetaDataAnnotation(&crd.ObjectMeta, "api-approved.kubernetes.io", "unapproved")
	if err := k8s.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := waitFor(ctx, time.Minute, func() (int, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return 0, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return 0, nil
			}
		}
		return 1, nil
	}); err != nil {
		return nil, fmt.Errorf("the Spotify operator's CRD: %w", err)
	}
	pair, err := webhookcert.Generate([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		return nil, err
	}
	if err := pair.Write(filepath.Join(p.tmp, "k8s-webhook-server", "serving-certs")); err != nil {
		return nil, err
	}
	for _, obj := range peerWebhooks(pair.CAPEM) {
		if err := k8s.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	if err := watch.watchPeer(ctx, cfg, namespaces); err != nil {
		return nil, err
	}
	return p, nil
}

// peerWebhooks are the peer's mutating (defaults) and validating webhooks,
// as its config/webhook/manifests.yaml declares them, served on loopback.
func peerWebhooks(ca []byte) []client.Object {
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{peerGVK.Group}, APIVersions: []string{peerGVK.Version}, Resources: []string{"flinkclusters"}},
	}}
	cc := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := fmt.Sprintf("https://127.0.0.1:%d%s", peerWebhookPort, path)
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	return []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-spotify-mutating"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mflinkcluster.flinkoperator.k8s.io", Rules: rules, FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ClientConfig: cc("/mutate-flinkoperator-k8s-io-v1beta1-flinkcluster")}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench-spotify-validating"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vflinkcluster.flinkoperator.k8s.io", Rules: rules, FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ClientConfig: cc("/validate-flinkoperator-k8s-io-v1beta1-flinkcluster")}}},
	}
}

// peerCluster is the bench's session cluster in the peer's API: one
// JobManager, two TaskManagers of two slots, Flink 1.17.
func peerCluster(ns string, i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"flinkVersion": "1.17",
			"image":        map[string]any{"name": "flink:1.17.1"},
			"jobManager":   map[string]any{"accessScope": "Cluster"},
			"taskManager":  map[string]any{"replicas": int64(2)},
			"flinkProperties": map[string]any{
				"taskmanager.numberOfTaskSlots": "2",
			},
		},
	}}
	u.SetGroupVersionKind(peerGVK)
	u.SetNamespace(ns)
	u.SetName(fmt.Sprintf("fc-%04d", i))
	return u
}

// peerProc is one run of the peer's process.
type peerProc struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	metrics string
	log     *os.File
}

func (p *peer) start(ctx context.Context, k8s client.Client, ns string, workers int) (*peerProc, error) {
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(p.stateDir, ns+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.bin, "--kubeconfig", p.kubeconfig, "--watch-namespace", ns,
		"--max-concurrent-reconciles", strconv.Itoa(workers), "--metrics-addr", addr, "--secure-metrics=false", "--zap-log-level=error")
	cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	proc := &peerProc{cmd: cmd, exited: make(chan struct{}), metrics: addr, log: log}
	go func() { _ = cmd.Wait(); close(proc.exited) }()
	// Ready once its controller's workers run and the API server reaches
	// its webhook: a dry-run create comes back defaulted.
	err = waitFor(ctx, time.Minute, func() (int, error) {
		select {
		case <-proc.exited:
			return 0, fmt.Errorf("the Spotify operator exited; its log is %s", log.Name())
		default:
		}
		if !proc.workersRunning() {
			return 1, nil
		}
		// The readiness probe is one of the mutating webhook's defaults.
		probe := peerCluster(ns, 0)
		if err := k8s.Create(ctx, probe, client.DryRunAll); err != nil {
			return 1, nil
		}
		if _, found, _ := unstructured.NestedMap(probe.Object, "spec", "jobManager", "readinessProbe"); !found {
			return 0, errors.New("a dry-run create of the Spotify operator's FlinkCluster came back without its defaults")
		}
		return 0, nil
	})
	if err != nil {
		proc.stop()
		return nil, err
	}
	return proc, nil
}

// workersRunning: the controller-runtime gauge of its controller's active
// workers is exported once the controller has started.
func (p *peerProc) workersRunning() bool {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return err == nil && strings.Contains(string(raw), "controller_runtime_active_workers{")
}

func (p *peerProc) pid() int { return p.cmd.Process.Pid }

func (p *peerProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.log.Close()
}

// peerPhase runs the peer for n session clusters in ns, as operatorPhase
// does Datapilot, and stops it once they are all Running.
func peerPhase(ctx context.Context, k8s client.Client, c config, meter cpuMeter, watch *readiness, p *peer, ns string, n int) (phase, error) {
	proc, err := p.start(ctx, k8s, ns, c.workers)
	if err != nil {
		return phase{n: n}, err
	}
	defer proc.stop()
	ph, err := convergePhase(ctx, k8s, c, meter.with("spotify-operator", proc.pid()), watch, ns, n, false,
		func(i int) client.Object { return peerCluster(ns, i) })
	if err != nil {
		return ph, err
	}
	// Its writes are counted up to its stop: like Datapilot's, it keeps
	// running a while after the last cluster converged.
	select {
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return ph, ctx.Err()
	}
	ph.peakRSS = peakRSS(proc.pid())
	return ph, nil
}

// watchPeer records, in r.available, when each of the peer's clusters in
// namespaces first said Running.
func (r *readiness) watchPeer(ctx context.Context, cfg *rest.Config, namespaces []string) error {
	nss := map[string]cache.Config{}
	for _, ns := range namespaces {
		nss[ns] = cache.Config{}
	}
	c, err := cache.New(cfg, cache.Options{DefaultNamespaces: nss, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(peerGVK)
	inf, err := c.GetInformer(ctx, u)
	if err != nil {
		return err
	}
	on := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != "Running" {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, seen := r.available[key]; !seen {
			r.available[key] = time.Now()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o any) { on(o) }}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return errors.New("the Spotify operator's FlinkCluster watch did not sync")
	}
	return nil
}

// peerRows report the peer's phase beside Datapilot's session clusters.
func peerRows(b *strings.Builder, c config, rounds []round) {
	ref := shapes[0].name
	took := collect(rounds, func(rd round) (float64, bool) { return rd.peer.took.Seconds(), true })
	fmt.Fprintf(b, "| Spotify operator: %d of its FlinkClusters (one JobManager, two TaskManagers), all `Running` | %s | |\n", c.n, took.format(seconds))
	rel := collect(rounds, func(rd round) (float64, bool) { return rd.peer.took.Seconds() / rd.baselines[ref].took.Seconds(), true })
	fmt.Fprintf(b, "| Spotify operator: ratio to the baseline of Datapilot's shape, same round | %s | |\n", rel.format(ratio))
	vs := collect(rounds, func(rd round) (float64, bool) {
		return rd.session.took.Seconds() / rd.peer.took.Seconds(), rd.session.n == c.n
	})
	fmt.Fprintf(b, "| Session clusters: time relative to the Spotify operator's, same round | %s | ≤ 1× (no slower) |\n", vs.format(ratio))
	q := func(f func(phase) []time.Duration, at float64) series {
		return collect(rounds, func(rd round) (float64, bool) { return quantile(f(rd.peer), at).Seconds(), len(f(rd.peer)) > 0 })
	}
	lags := func(p phase) []time.Duration { return p.lags }
	api := func(p phase) []time.Duration { return p.apiLags }
	last := rounds[len(rounds)-1].peer
	fmt.Fprintf(b, "| Spotify operator: last pod Ready → `Running`, median / p95 (%d clusters%s in the last round) | %s / %s | |\n", len(last.lags), incompleteNote(last.incomplete),
		q(lags, 0.5).format(seconds), q(lags, 0.95).format(seconds))
	fmt.Fprintf(b, "| Spotify operator: its share of the lag at the API server (audit log), median / p95 | %s / %s | |\n", q(api, 0.5).format(seconds), q(api, 0.95).format(seconds))
	writes := collect(rounds, func(rd round) (float64, bool) { return float64(rd.peer.writes) / float64(rd.peer.n), rd.peer.n > 0 })
	fmt.Fprintf(b, "| Spotify operator: writes per converged cluster, events included (audit log) | %s | |\n", writes.format(perCluster))
	peak := collect(rounds, func(rd round) (float64, bool) { return float64(rd.peer.peakRSS) / (1 << 20), rd.peer.peakRSS > 0 })
	fmt.Fprintf(b, "| Spotify operator: peak memory, %d clusters | %s | |\n", c.n, peak.format(func(v float64) string { return fmt.Sprintf("%.1f MiB", v) }))
	cpuRows(b, "Spotify operator", c.n, rounds, func(rd round) cpuSample { return rd.peer.cpu })
}

// peerOrder says where the peer's phase runs in a round, for the report.
func peerOrder(c config) string {
	if c.spotify == "" {
		return ""
	}
	return ", with the Spotify operator's session clusters before Datapilot's in even rounds (2, 4, ...) and the last, and after Datapilot's are deleted in the others"
}
