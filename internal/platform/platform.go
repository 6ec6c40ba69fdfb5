// Package platform runs a local Kubernetes control plane for development,
// end-to-end tests and benchmarks, without a container runtime: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler run as child
// processes from a bin dir, and kwok stands in for the kubelets of a few large
// fake nodes, so the real scheduler places pods and kwok makes them Running
// and Ready; the platform itself ends pods' graceful deletions, as kubelets
// do (deletionFinisher). Datapilot's CRDs are installed before Start
// returns.
package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Component names; each is also the name of its binary and of its log file,
// <stateDir>/logs/<name>.log.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// Components lists the child processes in start order.
var Components = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}

// ServiceClusterIPRange is the Service CIDR: a /16, so benchmarks can create
// thousands of ClusterIP Services.
const ServiceClusterIPRange = "10.96.0.0/16"

// StateStorageURI is the shared storage the local platform offers its
// Flink clusters, as a platform team would set an object store: the
// operator's default for checkpoints, savepoints and HA metadata. No Flink
// runs here and no file is written; the Flink REST simulator stands in for
// the store as it does for Flink.
const StateStorageURI = "s3://datapilot-local/state"

// Options configure the platform. The zero value of every field means its
// default.
type Options struct {
	// BinDir holds the component binaries; default <project root>/bin.
	BinDir string
	// StateDir holds the data, certificates, kubeconfigs, logs and PID file;
	// default <project root>/.datapilot. Start replaces the platform's files
	// in it, after stopping what a previous run left running; a state dir
	// whose platform is still running in another process is refused
	// (ErrInUse).
	StateDir string
	// Nodes is the number of fake nodes; default 4.
	Nodes int
	// NodeCPU, NodeMemory and NodePods are each fake node's capacity;
	// defaults 64, 256Gi and 250.
	NodeCPU    string
	NodeMemory string
	NodePods   int
	// AuditLogPath, when set, makes the API server write a JSON audit log
	// there, with AuditPolicy (default DefaultAuditPolicy: writes only, at
	// Metadata level).
	AuditLogPath string
	AuditPolicy  []byte
	// StartTimeout bounds Start; default 2 minutes.
	StartTimeout time.Duration
	// StopTimeout is how long a child gets after SIGTERM before SIGKILL;
	// default 10 seconds.
	StopTimeout time.Duration
	// Logger receives progress messages; default discards them.
	Logger logr.Logger
	// AdmissionPlugins are enabled on top of the API server's defaults,
	// such as OwnerReferencesPermissionEnforcement, which many clusters
	// run and which needs update on an owner's finalizers to block its
	// deletion.
	AdmissionPlugins []string
	// FlinkHARole installs the ClusterRole the chart ships for the Flink
	// pods of clusters with Kubernetes HA, for an operator run without the
	// chart (which would otherwise own it).
	FlinkHARole bool
	// Profiling serves the API server's /debug/pprof to its admins (the
	// bench's -apiserver-profile); off by default, as on most clusters.
	Profiling bool
}

// DefaultAuditPolicy records every write (create, update, patch, delete) at
// Metadata level and nothing else: enough to count the writes a client makes.
var DefaultAuditPolicy = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`)

// Platform is a running local control plane.
type Platform struct {
	opts       Options
	kubeconfig string
	config     *rest.Config
	startup    time.Duration
	etcdURL    string

	mu    sync.Mutex
	procs []*process
	// failed receives the first unexpected exit of a child.
	failed   chan error
	stopOnce sync.Once
	// stopFinisher ends the pod deletion finisher (deletionFinisher).
	stopFinisher func()
}

// MissingBinaries returns the component binaries absent from binDir (default
// <project root>/bin).
func MissingBinaries(binDir string) []string {
	if binDir == "" {
		binDir = filepath.Join(ProjectRoot(), "bin")
	}
	var missing []string
	for _, c := range Components {
		if st, err := os.Stat(filepath.Join(binDir, c)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, c)
		}
	}
	return missing
}

// ProjectRoot returns the nearest directory whose go.mod is Datapilot's,
// searching up from the working directory, then up from the running
// executable (bin/datapilot started from elsewhere); the working directory
// when neither has one.
func ProjectRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	if root, ok := findRoot(wd); ok {
		return root
	}
	if exe, err := os.Executable(); err == nil {
		if root, ok := findRoot(filepath.Dir(exe)); ok {
			return root
		}
	}
	return wd
}

func findRoot(dir string) (string, bool) {
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/datapilot/datapilot\n") {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func (o *Options) complete() error {
	root := ""
	if o.BinDir == "" || o.StateDir == "" {
		root = ProjectRoot()
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(root, "bin")
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Join(root, ".datapilot")
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return err
	}
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return err
	}
	if o.AuditLogPath != "" {
		if o.AuditLogPath, err = filepath.Abs(o.AuditLogPath); err != nil {
			return err
		}
		if o.AuditPolicy == nil {
			o.AuditPolicy = DefaultAuditPolicy
		}
	}
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	if o.NodeCPU == "" {
		o.NodeCPU = "64"
	}
	if o.NodeMemory == "" {
		o.NodeMemory = "256Gi"
	}
	if o.NodePods == 0 {
		o.NodePods = 250
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 10 * time.Second
	}
	if o.Nodes < 1 || o.Nodes > maxNodes {
		return fmt.Errorf("node count %d is not between 1 and %d", o.Nodes, maxNodes)
	}
	if o.NodePods < 1 || o.NodePods > maxPodsPerNode {
		return fmt.Errorf("pods per node %d is not between 1 and %d", o.NodePods, maxPodsPerNode)
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		return fmt.Errorf("binaries missing from %s: %s (run `make tools`)", o.BinDir, strings.Join(missing, ", "))
	}
	return nil
}

// Start runs the platform and returns once it is ready: the API server
// answers /readyz, every fake node is Ready without taints, the default
// ServiceAccount exists and Datapilot's CRDs are Established. ctx bounds only
// the start; the platform runs until Stop. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Platform, error) {
	began := time.Now()
	if err := opts.complete(); err != nil {
		return nil, err
	}
	log := opts.Logger

	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	killed, err := killLeftovers(opts.StateDir, opts.StopTimeout)
	if len(killed) > 0 {
		log.Info("Stopped leftovers of a previous run", "processes", killed)
	}
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	var p *Platform
	// Free ports are found by binding and releasing them; another process
	// can take one before our child binds it, so a start that fails on a
	// busy port is retried with new ones.
	for attempt := 1; ; attempt++ {
		if err := resetStateDir(opts.StateDir); err != nil {
			return nil, err
		}
		p = &Platform{opts: opts, failed: make(chan error, 1)}
		err := p.start(ctx)
		if err == nil {
			break
		}
		if stopErr := p.Stop(); stopErr != nil {
			log.Error(stopErr, "Stopping after a failed start")
		}
		if attempt < 3 && errors.Is(err, errPortInUse) && ctx.Err() == nil {
			log.Info("Retrying the start with other ports", "error", err.Error())
			continue
		}
		return nil, err
	}
	p.startup = time.Since(began)
	log.Info("Local platform ready", "startup", p.startup.Round(time.Millisecond), "nodes", opts.Nodes,
		"kubeconfig", p.kubeconfig)
	return p, nil
}

// stateEntries are the state dir's entries that a start replaces.
var stateEntries = []string{"etcd", "pki", "logs", "kubeconfigs", "kwok", "kubeconfig", "audit-policy.yaml", pidFileName}

func resetStateDir(dir string) error {
	for _, e := range stateEntries {
		if err := os.RemoveAll(filepath.Join(dir, e)); err != nil {
			return fmt.Errorf("cleaning state dir: %w", err)
		}
	}
	return os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
}

func (p *Platform) start(ctx context.Context) error {
	o := p.opts
	log := o.Logger
	pk, err := newPKI(filepath.Join(o.StateDir, "pki"))
	if err != nil {
		return err
	}
	ports, err := pickPorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	p.etcdURL = etcdURL
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	server := "https://127.0.0.1:" + strconv.Itoa(ports[2])

	// etcd. fsync is off: the data is thrown away with the platform.
	t := time.Now()
	if err := p.run(Etcd,
		"--name=datapilot",
		"--data-dir="+filepath.Join(o.StateDir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=datapilot="+peerURL,
		"--unsafe-no-fsync",
		// A single member elects itself after one election timeout.
		"--heartbeat-interval=20",
		"--election-timeout=200",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	); err != nil {
		return err
	}
	if err := p.poll(ctx, "etcd health", func(ctx context.Context) (bool, error) { return etcdHealthy(ctx, etcdURL) }); err != nil {
		return err
	}
	log.V(1).Info("Etcd ready", "took", time.Since(t).Round(time.Millisecond))

	// Kubeconfigs: one identity per component.
	kcDir := filepath.Join(o.StateDir, "kubeconfigs")
	if err := os.MkdirAll(kcDir, 0o700); err != nil {
		return fmt.Errorf("creating kubeconfig dir: %w", err)
	}
	identities := []struct{ name, user, group string }{
		{"admin", "datapilot-admin", "system:masters"},
		// Without --use-service-account-credentials every controller acts as
		// the controller-manager itself, which then needs every permission.
		{KubeControllerManager, "system:kube-controller-manager", "system:masters"},
		{KubeScheduler, "system:kube-scheduler", ""},
		// kwok updates node and pod status and node leases of any node.
		{Kwok, "kwok", "system:masters"},
	}
	kubeconfigs := map[string]string{}
	var kwokConfig *rest.Config
	for _, id := range identities {
		var groups []string
		if id.group != "" {
			groups = []string{id.group}
		}
		cert, err := pk.clientCert(id.user, groups...)
		if err != nil {
			return err
		}
		path := filepath.Join(kcDir, id.name+".kubeconfig")
		if id.name == "admin" {
			path = filepath.Join(o.StateDir, "kubeconfig")
			p.config = restConfigFor(server, pk.caPEM, cert)
			p.kubeconfig = path
		}
		if id.name == Kwok {
			kwokConfig = restConfigFor(server, pk.caPEM, cert)
		}
		if err := writeKubeconfig(path, server, pk.caPEM, cert); err != nil {
			return err
		}
		kubeconfigs[id.name] = path
	}

	// kube-apiserver.
	t = time.Now()
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback advertise address cannot back the kubernetes Service's
		// endpoints; nothing in this cluster dials it from a pod.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--tls-cert-file=" + pk.servingCert,
		"--tls-private-key-file=" + pk.servingKey,
		"--client-ca-file=" + pk.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pk.saPub,
		"--service-account-signing-key-file=" + pk.saKey,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		"--profiling=" + strconv.FormatBool(o.Profiling),
		// A stop answers new requests 429 with Retry-After (which client-go
		// retries) until those in flight are done, then closes within 2s.
		// By default the HTTP server instead waits --request-timeout (60s)
		// for every open watch to end, so each stop or restart of the API
		// server ran into Stop's SIGKILL after its 10s grace.
		"--shutdown-send-retry-after=true",
	}
	if len(o.AdmissionPlugins) > 0 {
		apiArgs = append(apiArgs, "--enable-admission-plugins="+strings.Join(o.AdmissionPlugins, ","))
	}
	if o.AuditLogPath != "" {
		policy := filepath.Join(o.StateDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, o.AuditPolicy, 0o644); err != nil {
			return fmt.Errorf("writing audit policy: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(o.AuditLogPath), 0o755); err != nil {
			return fmt.Errorf("creating audit log dir: %w", err)
		}
		// Truncate: the log describes this run only.
		if err := os.WriteFile(o.AuditLogPath, nil, 0o644); err != nil {
			return fmt.Errorf("creating audit log: %w", err)
		}
		apiArgs = append(apiArgs,
			"--audit-policy-file="+policy,
			"--audit-log-path="+o.AuditLogPath,
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxage=0",
			"--audit-log-maxbackup=0",
			"--audit-log-maxsize=0",
		)
	}
	if err := p.run(KubeAPIServer, apiArgs...); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(p.RESTConfig())
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if err := p.poll(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	}); err != nil {
		return err
	}
	log.V(1).Info("API server ready", "took", time.Since(t).Round(time.Millisecond))

	// The rest start together.
	if err := p.run(KubeControllerManager,
		"--kubeconfig="+kubeconfigs[KubeControllerManager],
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+pk.saKey,
		"--root-ca-file="+pk.caCert,
		"--cluster-signing-cert-file="+pk.caCert,
		"--cluster-signing-key-file="+pk.caKey,
		"--service-cluster-ip-range="+ServiceClusterIPRange,
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--concurrent-deployment-syncs=50",
		"--concurrent-replicaset-syncs=50",
		"--concurrent-statefulset-syncs=50",
		"--concurrent-service-endpoint-syncs=50",
		"--concurrent-endpoint-syncs=50",
		"--concurrent-gc-syncs=50",
		"--concurrent-namespace-syncs=20",
		"--concurrent-job-syncs=20",
		"--concurrent-serviceaccount-token-syncs=20",
		"--concurrent-disruption-syncs=20",
	); err != nil {
		return err
	}
	if err := p.run(KubeScheduler,
		"--kubeconfig="+kubeconfigs[KubeScheduler],
		"--secure-port=0",
		"--leader-elect=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	); err != nil {
		return err
	}
	stagesPath, err := writeStages(filepath.Join(o.StateDir, "kwok"))
	if err != nil {
		return err
	}
	if err := p.run(Kwok,
		"--kubeconfig="+kubeconfigs[Kwok],
		"--config="+stagesPath,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=40",
	); err != nil {
		return err
	}
	// The kubelets' last step of a pod's deletion, which kwok gets wrong.
	finisher, err := newDeletionFinisher(kwokConfig, log.WithName("deletions"))
	if err != nil {
		return fmt.Errorf("pod deletion finisher: %w", err)
	}
	fctx, stopFinisher := context.WithCancel(context.Background())
	finished := make(chan struct{})
	p.stopFinisher = func() { stopFinisher(); <-finished }
	go func() {
		defer close(finished)
		finisher.run(fctx)
	}()

	t = time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.createNodes(gctx, cs) })
	g.Go(func() error { return p.installCRDs(gctx) })
	if p.opts.FlinkHARole {
		g.Go(func() error { return p.installFlinkHARole(gctx, cs) })
	}
	g.Go(func() error { return p.waitDefaultServiceAccount(gctx, cs) })
	if err := g.Wait(); err != nil {
		return err
	}
	log.V(1).Info("Nodes, CRDs and controller-manager ready", "took", time.Since(t).Round(time.Millisecond))
	return nil
}

// run starts component name from the bin dir and records it in the PID file.
func (p *Platform) run(name string, args ...string) error {
	proc := &process{
		name: name,
		path: filepath.Join(p.opts.BinDir, name),
		args: args,
		log:  filepath.Join(p.opts.StateDir, "logs", name+".log"),
	}
	if err := proc.start(p.onExit); err != nil {
		return err
	}
	p.mu.Lock()
	p.procs = append(p.procs, proc)
	procs := slices.Clone(p.procs)
	p.mu.Unlock()
	p.opts.Logger.V(1).Info("Started", "component", name, "pid", proc.pid())
	return writePIDFile(p.opts.StateDir, procs)
}

func (p *Platform) onExit(proc *process) {
	if proc.isStopping() {
		return
	}
	err := fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", proc.name, proc.exitErr, proc.log, proc.logTail(20))
	select {
	case p.failed <- err:
	default:
	}
}

// childFailure returns an error if a child has exited without being stopped.
func (p *Platform) childFailure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proc := range p.procs {
		if proc.exited() && !proc.isStopping() {
			tail := proc.logTail(20)
			err := fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", proc.name, proc.exitErr, proc.log, tail)
			if strings.Contains(tail, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
	}
	return nil
}

// poll calls cond every 100ms until it returns true, ctx ends or a child dies.
func (p *Platform) poll(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	for {
		if err := p.childFailure(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		// Each try is short: a port that accepts but never answers must not
		// hide a child that has died meanwhile.
		tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
		ok, err := cond(tctx)
		tcancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops every child, newest first: SIGTERM, then SIGKILL after the stop
// timeout. It waits until they have exited and is safe to call more than once.
func (p *Platform) Stop() error {
	p.stopOnce.Do(func() {
		if p.stopFinisher != nil {
			p.stopFinisher()
		}
		p.mu.Lock()
		procs := slices.Clone(p.procs)
		p.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			t := time.Now()
			procs[i].stop(p.opts.StopTimeout)
			p.opts.Logger.V(1).Info("Stopped", "component", procs[i].name, "took", time.Since(t).Round(time.Millisecond))
		}
		if err := os.Remove(filepath.Join(p.opts.StateDir, pidFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.opts.Logger.Error(err, "Removing PID file")
		}
	})
	return nil
}

// RESTConfig returns a new admin (system:masters) config for the API server.
func (p *Platform) RESTConfig() *rest.Config { return rest.CopyConfig(p.config) }

// KubeconfigPath is the admin kubeconfig, <stateDir>/kubeconfig.
func (p *Platform) KubeconfigPath() string { return p.kubeconfig }

// StateDir is the absolute state dir.
func (p *Platform) StateDir() string { return p.opts.StateDir }

// BinDir is the absolute bin dir.
func (p *Platform) BinDir() string { return p.opts.BinDir }

// StartupDuration is how long Start took.
func (p *Platform) StartupDuration() time.Duration { return p.startup }

// Failed delivers an error when a child exits without being stopped.
func (p *Platform) Failed() <-chan error { return p.failed }

// PIDs returns each component's process ID.
func (p *Platform) PIDs() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, proc := range p.procs {
		out[proc.name] = proc.pid()
	}
	return out
}

// pickPorts is freePorts; tests replace it to provoke a port clash.
var pickPorts = freePorts

// errPortInUse marks a start that failed because a child's port was taken.
var errPortInUse = errors.New("port in use")

// freePorts returns n distinct free TCP ports on the loopback interface.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
