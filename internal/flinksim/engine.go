// Package flinksim is the Flink REST simulator: a stand-in for the REST API
// of Flink JobManagers, for the local platform and end-to-end tests, where no
// Flink runs. It models Flink as Flink's own sources describe it, so that a
// caller that passes against it would pass against Flink: JobManager and
// TaskManager processes that start (or refuse to) from the configuration
// file their pod mounts, a Dispatcher per JobManager process with its job
// result store and operation caches in memory, jobs that go through
// Flink's states on a clock, the restart strategy the configuration names,
// checkpoints and savepoints written to storage that does or does not
// outlive the pods, and high availability that recovers jobs from what
// survived. It is not Flink: jobs run no code.
//
// The state machine (Engine) is pure: Kubernetes observations and a clock go
// in, REST answers come out. Simulator adds the Kubernetes watch and the HTTP
// server. Every behaviour names, in a comment, the Flink class it follows.
package flinksim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// Simulated durations of what Flink does not configure, when EngineOptions
// leaves them zero.
const (
	DefaultInitializationDelay = 200 * time.Millisecond
	DefaultDeployDelay         = 200 * time.Millisecond
	DefaultCheckpointDelay     = 200 * time.Millisecond
	DefaultSavepointDelay      = 500 * time.Millisecond
	DefaultCancelDelay         = 300 * time.Millisecond
	// SimulatedFlinkRevision is the commit the simulator reports; it tells a
	// reader at once that no real Flink answered.
	SimulatedFlinkRevision = "flink-rest-simulator"
)

// EngineOptions tune how long the simulated work takes. Everything Flink
// itself times (checkpoint intervals, restart backoff, how long operation
// results are kept, leader election) comes from each process's
// configuration instead.
type EngineOptions struct {
	// InitializationDelay is how long a submitted or recovered job stays
	// INITIALIZING while its JobMaster is created.
	InitializationDelay time.Duration
	// DeployDelay is how long tasks stay DEPLOYING once they have slots.
	DeployDelay time.Duration
	// CheckpointDelay is how long a checkpoint takes.
	CheckpointDelay time.Duration
	// SavepointDelay is how long a savepoint (or stop-with-savepoint) takes.
	SavepointDelay time.Duration
	// CancelDelay is how long tasks take to cancel: CANCELLING and FAILING
	// last this long.
	CancelDelay time.Duration
	// StatementDelay is how long a SQL Gateway operation runs before its
	// result is ready.
	StatementDelay time.Duration
	// Clock is the time source; nil means time.Now.
	Clock func() time.Time
}

// ClusterKey names a Flink cluster: the namespace and the Service in front
// of its JobManagers (the first by name whose selector matches them; the
// JobManager pod's name when none does). REST requests name a Service the
// same way.
type ClusterKey struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (k ClusterKey) String() string { return k.Namespace + "/" + k.Name }

// Fault is an injected behaviour of checkpoints or savepoints.
type Fault string

const (
	// FaultNone clears the fault.
	FaultNone Fault = ""
	// FaultFail makes snapshots fail when they would complete: the
	// JobManager cannot finalize them (FINALIZE_CHECKPOINT_FAILURE).
	FaultFail Fault = "fail"
	// FaultStall keeps snapshots in progress until the fault is cleared or
	// execution.checkpointing.timeout expires them.
	FaultStall Fault = "stall"
)

// StopFault is an injected ending of stop-with-savepoint.
type StopFault string

const (
	// StopFinishes is Flink's usual ending: the tasks finish after the
	// savepoint and the job is FINISHED.
	StopFinishes StopFault = ""
	// StopTasksDoNotFinish makes a task fail instead of finishing once the
	// savepoint is complete: the job fails over, the stop fails.
	StopTasksDoNotFinish StopFault = "tasksDoNotFinish"
)

// Engine holds the simulated state of every cluster. Time-driven changes
// are applied lazily, in time order, whenever a cluster is read or
// observed, so the Engine needs no goroutine and a test clock drives it
// completely. Safe for concurrent use.
type Engine struct {
	opts EngineOptions

	mu       sync.Mutex
	clusters map[ClusterKey]*cluster
	// fs holds every file: object stores are shared by all clusters.
	fs *filesystem
	// snapshots are the completed checkpoints and savepoints by the
	// location of their _metadata, for restores by path.
	snapshots map[loc]*snapshot
	// gateways are the SQL Gateway processes by namespace/pod UID/
	// container, and gatewayNets the network their clients dial per
	// namespace.
	gateways    map[string]*sqlGateway
	gatewayNets map[string]Network
	// conns are the JobManagers each client connection reached, by the
	// Service it was made to: the simulator's one listener carries every
	// Service's connections, so one client connection to it stands for one
	// connection per Service it named. kube-proxy balances connections,
	// not requests.
	conns map[string]map[serviceConn]route
	// serviceClusters are the observed clusters behind each Service and
	// jobManagerPods the clusters with a JobManager process in each pod
	// (by namespace and pod name): indexes, so that a request to a Service
	// or pod named after no cluster costs the clusters concerned, not a
	// scan of every cluster the simulator ever saw under mu (a bench run
	// creating thousands of clusters in turn spent a sixth of its process
	// on those scans in its first round, and more with each). How the
	// simulator finds its state, not a Flink behaviour.
	serviceClusters map[ClusterKey]map[*cluster]struct{}
	jobManagerPods  map[ClusterKey]map[*cluster]struct{}
	// serviceRR is each Service's round-robin cursor over its endpoints.
	serviceRR map[ClusterKey]int
}

// NewEngine returns an empty Engine.
func NewEngine(o EngineOptions) *Engine {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&o.InitializationDelay, DefaultInitializationDelay}, {&o.DeployDelay, DefaultDeployDelay},
		{&o.CheckpointDelay, DefaultCheckpointDelay}, {&o.SavepointDelay, DefaultSavepointDelay},
		{&o.CancelDelay, DefaultCancelDelay}, {&o.StatementDelay, DefaultStatementDelay},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return &Engine{opts: o, clusters: map[ClusterKey]*cluster{}, fs: newFilesystem(), snapshots: map[loc]*snapshot{},
		gateways: map[string]*sqlGateway{}, gatewayNets: map[string]Network{},
		conns: map[string]map[serviceConn]route{}, serviceClusters: map[ClusterKey]map[*cluster]struct{}{},
		jobManagerPods: map[ClusterKey]map[*cluster]struct{}{}, serviceRR: map[ClusterKey]int{}}
}

// index adds c to the set at key of an index.
func index[K comparable](m map[K]map[*cluster]struct{}, key K, c *cluster) {
	if m[key] == nil {
		m[key] = map[*cluster]struct{}{}
	}
	m[key][c] = struct{}{}
}

// unindex removes c from the set at key of an index.
func unindex[K comparable](m map[K]map[*cluster]struct{}, key K, c *cluster) {
	delete(m[key], c)
	if len(m[key]) == 0 {
		delete(m, key)
	}
}

// firstByKey is, of a set of clusters, the first by key: an index keeps no
// order, and the answer should not change from one request to the next.
func firstByKey(set map[*cluster]struct{}) *cluster {
	var first *cluster
	for c := range set {
		if first == nil || c.key.String() < first.key.String() {
			first = c
		}
	}
	return first
}

func (e *Engine) now() time.Time { return e.opts.Clock() }

// apiError is a REST error: an HTTP status and Flink's {"errors": [...]}.
// Status 0 means nothing listens: the client's connection is refused.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string {
	if e.code == 0 {
		return "connection refused: " + e.msg
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.msg)
}

func errorf(code int, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// restErr is a RestHandlerException as AbstractHandler#handleException
// sends it: the whole stack trace as the one error message, so the first
// line is the exception and its message.
func restErr(code int, exception, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	first, rest, _ := strings.Cut(msg, "\nCaused by: ")
	trace := exception + ": " + first + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)"
	if rest != "" {
		trace += "\nCaused by: " + rest + "\n\t... 1 more"
	}
	return &apiError{code: code, msg: trace}
}

// internalErr is how AbstractHandler#handleException answers an exception
// a handler did not turn into a RestHandlerException: 500, "Internal
// server error." and the stack trace in angle brackets.
func internalErr(format string, args ...any) error {
	return &apiError{code: http.StatusInternalServerError, msg: "Internal server error.\x00<java.util.concurrent.CompletionException: " + fmt.Sprintf(format, args...) + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)>"}
}

func handlerErr(code int, format string, args ...any) error {
	return restErr(code, "org.apache.flink.runtime.rest.handler.RestHandlerException", format, args...)
}

// statusOf is the HTTP status of an Engine error; 0 when the connection
// would have been refused.
func statusOf(err error) int {
	if ae, ok := err.(*apiError); ok {
		return ae.code
	}
	return http.StatusInternalServerError
}

// cluster is everything the simulator knows of one cluster's pods.
type cluster struct {
	key      ClusterKey
	observed bool

	// jms and tms are the live processes, oldest first.
	jms, tms []*process
	// waiting are pods that run but whose process has not started, by UID,
	// with why (a ConfigMap that is not there yet).
	waiting map[string]string
	// ha holds what high availability keeps outside the JobManagers, by
	// its identity (type, cluster-id and where the pointers are).
	ha map[string]*haStore
	// services are the Services in front of the JobManagers, and net the
	// network the TaskManagers dial, as last observed.
	services []Service
	net      Network

	unavailable int // remaining 503 answers; <0 means until cleared
	// lostAnswers counts, by endpoint, the requests still to take effect
	// without an answer (LoseAnswers).
	lostAnswers     map[string]int
	savepointFault  Fault
	checkpointFault Fault
	stopFault       StopFault
	// taskStartFault, when set, is the exception every task that deploys
	// from now on throws as it restores or opens (see SetTaskStartFault).
	taskStartFault string
	cancelDelay    time.Duration // 0: EngineOptions.CancelDelay
	// restoreDelay is how long tasks stay INITIALIZING (SetRestoreDelay).
	restoreDelay   time.Duration
	savepointDelay time.Duration // 0: EngineOptions.SavepointDelay
	// cleanupDelay is how long a globally terminal job's cleanup takes
	// with high availability (SetCleanupDelay); 0: at once.
	cleanupDelay time.Duration
	requests     map[string]int
	totals       Totals
	history      map[string]*jobHistory
	historyOrder []string
	record       Record   // what Flink saw of its jobs (record.go)
	events       []string // what happened to processes, newest last
	workload     *workload
}

// dispatchers are the Dispatchers of the cluster's JobManager processes
// that run one (a leader, or every process without high availability),
// yielded without a slice: nextEvent walks them on every engine step.
func (c *cluster) dispatchers() iter.Seq[*dispatcher] {
	return func(yield func(*dispatcher) bool) {
		for _, p := range c.jms {
			if p.d != nil && !yield(p.d) {
				return
			}
		}
	}
}

func (e *Engine) get(k ClusterKey) *cluster {
	c := e.clusters[k]
	if c == nil {
		c = &cluster{key: k, waiting: map[string]string{}, ha: map[string]*haStore{}, requests: map[string]int{}, history: map[string]*jobHistory{}}
		e.clusters[k] = c
	}
	return c
}

func (c *cluster) logf(now time.Time, format string, args ...any) {
	c.events = append(c.events, now.UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
	if len(c.events) > 200 {
		c.events = c.events[len(c.events)-200:]
	}
}

// Observation is what the Kubernetes API says about one cluster: its
// JobManager and TaskManager pods, the Services in front of its
// JobManagers, and the network its processes dial through.
type Observation struct {
	JobManagers  []Pod
	TaskManagers []Pod
	// Services are the Services whose selector matches a JobManager pod;
	// a REST client reaches the cluster through them. Observe names an
	// unnamed one after the cluster key.
	Services []Service
	// Network resolves what the TaskManagers dial; nil resolves nothing.
	Network Network
}

// Pod is one Flink pod as its spec and status show it.
type Pod struct {
	UID  string
	Name string
	// Created orders the pods.
	Created time.Time
	// Running is true while the container runs: phase Running and not
	// being deleted. A process lives exactly while its pod runs.
	Running bool
	// Ready is the Ready condition: the Service routes only to Ready pods.
	Ready bool
	// Image is the Flink container's image; its tag is the Flink version.
	Image string
	// Role is the entrypoint's role argument; empty is jobmanager in
	// JobManagers and taskmanager in TaskManagers.
	Role Role
	// StartArgs are the arguments after the entrypoint's role argument
	// ($(VAR) references expanded), which the start script receives.
	StartArgs []string
	// Env is the Flink container's environment (ENABLE_BUILT_IN_PLUGINS,
	// FLINK_PROPERTIES, ...), with the references Kubernetes resolves.
	Env map[string]string
	// Hostname is what `hostname -f` prints in the container.
	Hostname string
	// ConfDir is $FLINK_CONF_DIR; empty is the image's ${FLINK_HOME}/conf.
	ConfDir string
	// Conf is the files in ConfDir: what is mounted there, or nil for the
	// image's own conf directory.
	Conf map[string]string
	// ConfOverImage says Conf's files are mounted one by one (subPath)
	// over the image's own conf directory, whose other files remain.
	ConfOverImage bool
	// NoConfDir says ConfDir does not exist in the container.
	NoConfDir bool
	// ConfWritable says the entrypoint can edit the conf directory it
	// edits (${FLINK_HOME}/conf, when it is ConfDir): not a ConfigMap
	// volume, which the kubelet mounts read-only.
	ConfWritable bool
	// ConfMissing names the mounted ConfigMap when it does not exist: the
	// kubelet cannot start the container.
	ConfMissing string
	// Mounts are the Flink container's volumes.
	Mounts []Mount
	// KubernetesAccess is, for a JobManager with Kubernetes HA, why its
	// ServiceAccount may not use the leader ConfigMaps; empty when it may.
	KubernetesAccess string
}

// Observe records what the Kubernetes API shows for a cluster: processes
// start in pods that run and stop in pods that do not; a pod whose process
// stopped keeps nothing of it. A process never re-reads its configuration.
func (e *Engine) Observe(k ClusterKey, o Observation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.get(k)
	now := e.now()
	e.advance(c, now)
	c.observed = true
	c.net = o.Network
	for _, s := range c.services {
		unindex(e.serviceClusters, ClusterKey{Namespace: k.Namespace, Name: s.Name}, c)
	}
	c.services = nil
	for _, s := range o.Services {
		if s.Name == "" {
			s.Name = k.Name
		}
		c.services = append(c.services, s)
		index(e.serviceClusters, ClusterKey{Namespace: k.Namespace, Name: s.Name}, c)
	}
	c.tms = e.reconcile(c, now, c.tms, o.TaskManagers, false)
	for _, p := range c.jms {
		unindex(e.jobManagerPods, ClusterKey{Namespace: k.Namespace, Name: p.pod.Name}, c)
	}
	c.jms = e.reconcile(c, now, c.jms, o.JobManagers, true)
	for _, p := range c.jms {
		index(e.jobManagerPods, ClusterKey{Namespace: k.Namespace, Name: p.pod.Name}, c)
	}
	e.elect(c, now)
	e.advance(c, now)
}

// reconcile stops the processes whose pods no longer run and starts one in
// every running pod that has none.
func (e *Engine) reconcile(c *cluster, now time.Time, have []*process, pods []Pod, jobManager bool) []*process {
	byUID := map[string]Pod{}
	for _, p := range pods {
		if p.Running {
			byUID[p.UID] = p
		}
	}
	var out []*process
	for _, p := range have {
		if pod, ok := byUID[p.pod.UID]; ok {
			p.pod.Ready, p.pod.KubernetesAccess = pod.Ready, pod.KubernetesAccess
			out = append(out, p)
			delete(byUID, p.pod.UID)
			continue
		}
		// SIGTERM: the process shuts down cleanly; the pod's own disk
		// goes with the pod.
		e.stop(c, now, p, true, "the pod stopped running")
		e.fs.dropPod(p.pod.UID)
	}
	for uid := range c.waiting {
		if _, ok := byUID[uid]; !ok {
			delete(c.waiting, uid)
		}
	}
	news := make([]Pod, 0, len(byUID))
	for _, p := range byUID {
		news = append(news, p)
	}
	sort.Slice(news, func(i, j int) bool {
		if !news[i].Created.Equal(news[j].Created) {
			return news[i].Created.Before(news[j].Created)
		}
		return news[i].Name < news[j].Name
	})
	for _, pod := range news {
		if pod.ConfMissing != "" {
			msg := fmt.Sprintf(`MountVolume.SetUp failed for volume "flink-config" : configmap %q not found`, pod.ConfMissing)
			if c.waiting[pod.UID] != msg {
				c.logf(now, "pod %s: %s", pod.Name, msg)
			}
			c.waiting[pod.UID] = msg
			continue
		}
		delete(c.waiting, pod.UID)
		out = append(out, e.start(c, now, pod, jobManager, 0))
	}
	return out
}

// process is one Flink JobManager or TaskManager JVM.
type process struct {
	pod        Pod
	namespace  string
	generation int // restarts of the process in the same pod (injected)
	jobManager bool
	version    flink.Version
	conf       *conf
	// down says why the process does not serve: it refused to start, or
	// died of a fatal error. Its REST port is then not listening.
	down string
	log  []string

	officialImage bool
	plugins       []string

	// A JobManager's settings read at start.
	storeDuration time.Duration
	ha            *haConfig
	webTmp        string // web.tmpdir: unique per process (ClusterEntrypoint)
	// d is the process's Dispatcher while it leads (always, without HA).
	d *dispatcher
	// jobStore is the process's ExecutionGraphInfoStore; rest its REST
	// endpoint's caches.
	jobStore *jobStore
	rest     *restCaches

	// A TaskManager's slots (taskmanager.numberOfTaskSlots).
	slots int
	// rpcHost and rpcPort are, for a JobManager, its canonical RPC
	// address (jobmanager.rpc.address) and the port it listens on; for a
	// TaskManager without high availability, what it dials.
	rpcHost string
	rpcPort int32
	// restPort is the port a JobManager's REST endpoint listens on.
	restPort int32
	// rm is the JobManager process a TaskManager registered with.
	rm string
	// refused is the Kubernetes API's refusal a JobManager last logged.
	refused string

	// A JobManager's MetricFetcher: its MetricStore and when it last
	// fetched.
	metrics        *metricStore
	metricsFetched time.Time
	// metricsInterval is metrics.fetcher.update-interval as the process
	// read it at start; 0 is the VoidMetricFetcher.
	metricsInterval time.Duration
}

func (p *process) id() string { return fmt.Sprintf("%s#%d", p.pod.UID, p.generation) }

func (p *process) logf(now time.Time, format string, args ...any) {
	p.log = append(p.log, now.UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
	if len(p.log) > 100 {
		p.log = p.log[len(p.log)-100:]
	}
}

// serving reports whether the process listens on its REST port (for a
// JobManager) or has registered (a TaskManager).
func (p *process) serving() bool { return p.down == "" }

// start launches a process in a pod: it reads the mounted configuration
// and checks what its entrypoint checks before serving.
func (e *Engine) start(c *cluster, now time.Time, pod Pod, jobManager bool, generation int) *process {
	p := &process{pod: pod, namespace: c.key.Namespace, generation: generation, jobManager: jobManager}
	p.officialImage, p.plugins = officialImage(pod.Image), splitPlugins(pod.Env["ENABLE_BUILT_IN_PLUGINS"])
	what := "TaskManager"
	if jobManager {
		what = "JobManager"
	}
	fail := func(err error) *process {
		p.down = err.Error()
		p.logf(now, "ERROR %s refused to start: %s", what, p.down)
		c.logf(now, "%s %s (pod %s) refused to start: %s", what, p.id(), pod.Name, p.down)
		return p
	}
	v := ImageVersion(pod.Image)
	if v == "" {
		return fail(fmt.Errorf("the Flink REST simulator takes the Flink version from the image tag, and %q has none", pod.Image))
	}
	ver, err := flink.ParseVersion(v)
	if err != nil {
		return fail(err)
	}
	p.version = ver
	role := RoleTaskManager
	if jobManager {
		role = pod.role()
	}
	if p.conf, err = podConf(ver, pod, role); err != nil {
		return fail(err)
	}
	if err := p.conf.processMemory(jobManager); err != nil {
		return fail(err)
	}
	p.rpcHost, _ = p.conf.raw("jobmanager.rpc.address")
	if !jobManager {
		if p.slots, err = p.conf.integer("taskmanager.numberOfTaskSlots"); err != nil {
			return fail(err)
		}
		if p.ha, err = readHAConfig(p); err != nil {
			return fail(err)
		}
		if p.ha == nil {
			// HighAvailabilityServicesUtils#getJobManagerAddress.
			if strings.TrimSpace(p.rpcHost) == "" {
				return fail(fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: Config parameter 'jobmanager.rpc.address' is missing (hostname/address of JobManager to connect to)."))
			}
			if p.rpcPort, err = p.conf.port("jobmanager.rpc.port"); err != nil {
				return fail(err)
			}
		}
		p.logf(now, "INFO TaskExecutor started with %d slots", p.slots)
		c.logf(now, "TaskManager %s (pod %s) started with %d slots", p.id(), pod.Name, p.slots)
		return p
	}
	if p.rpcPort, err = p.conf.bindPort("jobmanager.rpc.bind-port", "jobmanager.rpc.port"); err != nil {
		return fail(err)
	}
	if p.restPort, err = p.conf.bindPort("rest.bind-port", "rest.port"); err != nil {
		return fail(err)
	}
	if p.storeDuration, _, err = p.conf.duration("rest.async.store-duration"); err != nil {
		return fail(err)
	}
	// DefaultDispatcherResourceManagerComponentFactory#create reads
	// metrics.fetcher.update-interval (a Long of milliseconds before 1.20,
	// a Duration from 1.20): 0 is the VoidMetricFetcher, and
	// MetricFetcherImpl's constructor refuses a negative one.
	if p.metricsInterval, _, err = p.conf.duration("metrics.fetcher.update-interval"); err != nil {
		return fail(err)
	}
	if p.metricsInterval < 0 {
		return fail(fmt.Errorf("java.lang.IllegalArgumentException: The update interval must be larger than 0."))
	}
	if p.jobStore, err = readJobStore(p.conf, now); err != nil {
		return fail(err)
	}
	if p.rest, err = readRestCaches(p.conf); err != nil {
		return fail(err)
	}
	if p.ha, err = readHAConfig(p); err != nil {
		return fail(err)
	}
	p.webTmp = "/tmp/flink-web-" + uuid()
	if p.ha == nil {
		p.d = newDispatcher(p)
	}
	p.logf(now, "INFO Rest endpoint listening at %s:%d", pod.Name, p.restPort)
	c.logf(now, "JobManager %s (pod %s) started, Flink %s, high availability %s", p.id(), pod.Name, ver, p.haMode())
	return p
}

func (p *process) haMode() string {
	if p.ha == nil {
		return "NONE"
	}
	return p.ha.mode
}

// stop ends a process. A clean stop (SIGTERM) releases its leadership at
// once; a crash leaves it to expire.
func (e *Engine) stop(c *cluster, now time.Time, p *process, clean bool, why string) {
	what := "TaskManager"
	if p.jobManager {
		what = "JobManager"
	}
	c.logf(now, "%s %s (pod %s) stopped: %s", what, p.id(), p.pod.Name, why)
	if !p.jobManager {
		e.loseTaskManager(c, now, p, clean)
		return
	}
	if p.d != nil {
		suspended := p.d.live()
		e.suspend(p.d, now, c, clean)
		e.recordSuspended(c, suspended, now)
	}
	if p.ha != nil {
		if s := c.ha[p.ha.identity]; s != nil && s.leader == p.id() {
			s.leader = ""
			if !clean {
				s.vacantUntil = now.Add(p.ha.leaseDuration)
			}
		}
	}
	p.d = nil
	p.down = why
}

// elect gives each high-availability store a leader when it has none and
// its last leader's lease has expired: the oldest JobManager that serves
// and shares the store's identity (DefaultLeaderElectionService with the
// ZooKeeper or Kubernetes driver). Without high availability every
// JobManager leads its own Dispatcher (StandaloneHaServices).
func (e *Engine) elect(c *cluster, now time.Time) {
	defer c.register()
	for _, p := range c.jms {
		if !p.serving() || p.ha == nil {
			continue
		}
		if p.ha.mode == "KUBERNETES" && p.pod.KubernetesAccess != "" {
			// KubernetesLeaderElector: fabric8's LeaderElector cannot read
			// or create the leader ConfigMap and retries; the process
			// serves REST but never leads (a leader it was keeps its lease
			// until it fails to renew it; not modelled).
			if p.refused != p.pod.KubernetesAccess {
				p.refused = p.pod.KubernetesAccess
				p.logf(now, "ERROR Exception occurred while acquiring lock 'ConfigMapLock': %s", p.refused)
				c.logf(now, "JobManager %s (pod %s) cannot take part in the leader election: %s", p.id(), p.pod.Name, p.refused)
			}
			continue
		}
		p.refused = ""
		s := c.ha[p.ha.identity]
		if s == nil {
			s = newHAStore(p.ha.identity)
			c.ha[p.ha.identity] = s
		}
		if s.leader != "" || now.Before(s.vacantUntil) {
			continue
		}
		s.leader = p.id()
		p.logf(now, "INFO JobManager %s was granted leadership", p.id())
		c.logf(now, "JobManager %s (pod %s) leads (%s)", p.id(), p.pod.Name, s.identity)
		p.d = newDispatcher(p)
		if err := p.d.recover(e, c, now, s); err != nil {
			// DispatcherLeaderProcess fails fatally when it cannot recover
			// a job; the JobManager process exits.
			e.stop(c, now, p, false, err.Error())
			p.logf(now, "ERROR Fatal error occurred in the cluster entrypoint: %s", p.down)
		}
	}
}

// leaderOf is the JobManager whose Dispatcher serves requests received by
// p: p itself without high availability, else the elected leader; nil
// while an election is pending.
func (c *cluster) leaderOf(p *process) *process {
	if p.ha == nil {
		return p
	}
	s := c.ha[p.ha.identity]
	if s == nil || s.leader == "" {
		return nil
	}
	for _, q := range c.jms {
		if q.id() == s.leader {
			return q
		}
	}
	return nil
}

// resourceManager is the cluster's ResourceManager: the HA leader, else
// (every JobManager without high availability runs its own) the oldest
// serving JobManager that a TaskManager registered with, else the oldest
// serving one.
func (c *cluster) resourceManager() *process {
	var first *process
	for _, p := range c.jms {
		if !p.serving() {
			continue
		}
		l := c.leaderOf(p)
		if l == nil {
			continue
		}
		if p.ha != nil {
			return l
		}
		for _, t := range c.tms {
			if t.rm == l.id() {
				return l
			}
		}
		if first == nil {
			first = l
		}
	}
	return first
}

// registered are the TaskManagers registered with the ResourceManager.
func (c *cluster) registered() []*process {
	rm := c.resourceManager()
	if rm == nil {
		return nil
	}
	var out []*process
	for _, t := range c.tms {
		if t.serving() && t.rm == rm.id() {
			out = append(out, t)
		}
	}
	return out
}

// freeSlots counts each registered TaskManager's free slots.
func (c *cluster) freeSlots() map[string]int {
	free := map[string]int{}
	for _, t := range c.registered() {
		free[t.id()] = t.slots
	}
	if rm := c.resourceManager(); rm != nil && rm.d != nil {
		for _, j := range rm.d.jobs {
			for _, tm := range j.slots {
				free[tm]--
			}
		}
	}
	return free
}

func (c *cluster) slotsTotal() int {
	n := 0
	for _, t := range c.registered() {
		n += t.slots
	}
	return n
}

func (c *cluster) slotsAvailable() int {
	n := 0
	for _, f := range c.freeSlots() {
		n += max(0, f)
	}
	return n
}

// loseTaskManager fails the tasks a TaskManager ran: its jobs fail over.
func (e *Engine) loseTaskManager(c *cluster, now time.Time, tm *process, clean bool) {
	cause := "org.apache.flink.util.FlinkExpectedException: The TaskExecutor is shutting down."
	if !clean {
		cause = fmt.Sprintf("org.apache.flink.runtime.jobmaster.JobMasterException: TaskManager with id %s is no longer reachable.", tm.pod.Name)
	}
	for _, jm := range c.jms {
		if jm.d == nil {
			continue
		}
		for _, id := range jm.d.order {
			j := jm.d.jobs[id]
			if slices.Contains(j.slots, tm.id()) {
				e.failJob(c, j, now, cause, false)
			}
		}
	}
}

// advance applies everything the clock has made due, in time order.
func (e *Engine) advance(c *cluster, now time.Time) {
	for range 100000 {
		at, fn := e.nextEvent(c)
		if fn == nil || at.After(now) {
			break
		}
		e.stepWorkload(c, at)
		fn(at)
		e.elect(c, at)
		e.schedule(c, at)
		c.recordRunning(at)
	}
	e.stepWorkload(c, now)
	e.elect(c, now)
	e.schedule(c, now)
	c.recordRunning(now)
	for _, p := range c.jms {
		if p.d != nil {
			p.d.savepoints.evict(now)
			p.d.checkpoints.evict(now)
			p.d.expireJobs(c, now)
		}
	}
}

// nextEvent is the earliest pending change of the cluster.
func (e *Engine) nextEvent(c *cluster) (time.Time, func(time.Time)) {
	var (
		best time.Time
		fn   func(time.Time)
	)
	consider := func(t time.Time, f func(time.Time)) {
		if f != nil && (fn == nil || t.Before(best)) {
			best, fn = t, f
		}
	}
	for _, s := range c.ha {
		if s.leader == "" && !s.vacantUntil.IsZero() {
			consider(s.vacantUntil, func(at time.Time) { s.vacantUntil = time.Time{} })
		}
	}
	for d := range c.dispatchers() {
		for _, id := range d.order {
			t, f := e.jobEvent(c, d.jobs[id])
			consider(t, f)
		}
		for _, id := range slices.Sorted(maps.Keys(d.cleanups)) {
			consider(d.cleanups[id], func(time.Time) { d.cleanUp(e, id) })
		}
	}
	return best, fn
}

// schedule gives waiting jobs of the ResourceManager's Dispatcher their
// slots, TaskManager by TaskManager, in submission order.
func (e *Engine) schedule(c *cluster, now time.Time) {
	rm := c.resourceManager()
	if rm == nil || rm.d == nil {
		return
	}
	free := c.freeSlots()
	tms := c.registered()
	for _, id := range rm.d.order {
		j := rm.d.jobs[id]
		if j.adaptive != nil {
			if j.waiting {
				e.scheduleAdaptive(c, j, free, tms, now)
			} else if j.state == flink.JobRunning {
				total := 0
				for _, t := range tms {
					total += max(0, free[t.id()])
				}
				e.maybeRescale(c, j, total, now)
			}
			continue
		}
		if j.state != flink.JobRunning || j.tasks != "SCHEDULED" {
			continue
		}
		total := 0
		for _, t := range tms {
			total += max(0, free[t.id()])
		}
		if total < j.parallelism {
			continue
		}
		need := j.parallelism
		for _, t := range tms {
			for free[t.id()] > 0 && need > 0 {
				j.slots = append(j.slots, t.id())
				free[t.id()]--
				need--
			}
		}
		j.tasks = "DEPLOYING"
		j.tasksUntil = now.Add(e.opts.DeployDelay)
	}
}

// request is the entry point of every REST call. It finds the JobManager
// the connection reached (a target without one is a new connection to the
// Service), applies the injected unavailability, counts the request and
// advances the cluster's clock. fn runs under the Engine's lock with the
// receiving JobManager.
func (e *Engine) request(t target, endpoint string, fn func(c *cluster, jm *process, now time.Time) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	var c *cluster
	var jm *process
	if t.jm == "" {
		var err error
		if c, jm, err = e.connect(t.k, t.servicePort(), now); err != nil {
			return err
		}
	} else if c, jm = e.reached(t, now); jm == nil {
		return errorf(0, "the JobManager this connection reached is gone")
	}
	c.requests[endpoint]++
	if c.unavailable != 0 {
		if c.unavailable > 0 {
			c.unavailable--
		}
		return errorf(http.StatusServiceUnavailable, "Flink REST simulator: 503 injected for %s", c.key)
	}
	err := fn(c, jm, now)
	e.advance(c, now)
	if c.lostAnswers[endpoint] > 0 {
		c.lostAnswers[endpoint]--
		// The request took effect; its answer never arrives (status 0:
		// the connection is reset, see LoseAnswers).
		return errorf(0, "Flink REST simulator: the answer to %s is lost (injected)", endpoint)
	}
	return err
}

// target is where a request goes: a Service (its namespace and name, and
// port; 0 is RESTPort) and, once the connection is made, the cluster and
// JobManager process that received it.
type target struct {
	k    ClusterKey
	port int32
	// cluster and jm are the process the connection reached.
	cluster ClusterKey
	jm      string
	// direct is a connection to the pod, not through the Service.
	direct bool
}

// RESTPort is the port a REST client dials when its address names none:
// rest.port's default, which flink.Resolver dials.
const RESTPort = 8081

func (t target) servicePort() int32 {
	if t.port == 0 {
		return RESTPort
	}
	return t.port
}

// connect is kube-proxy's choice of endpoint for a new connection to
// Service k on port: round-robin over the JobManagers listening on their
// REST port at the Service's ready endpoints. kube-proxy knows nothing of
// Flink clusters: a Service whose selector matches the JobManagers of
// several clusters balances its connections over all of them. A Service
// that reaches no such JobManager refuses the connection. Callers hold
// e.mu.
func (e *Engine) connect(k ClusterKey, port int32, now time.Time) (*cluster, *process, error) {
	owners := make([]*cluster, 0, len(e.serviceClusters[k]))
	for c := range e.serviceClusters[k] {
		owners = append(owners, c)
	}
	if len(owners) == 0 {
		return nil, nil, errorf(0, "no Service %s in front of a Flink cluster is known to the simulator", k)
	}
	// An index keeps no order; the round-robin needs one.
	sort.Slice(owners, func(i, j int) bool { return owners[i].key.String() < owners[j].key.String() })
	type endpoint struct {
		c  *cluster
		jm *process
	}
	var ready []endpoint
	for _, c := range owners {
		e.advance(c, now)
		jms, _ := c.restEndpoints(k.Name, port)
		for _, jm := range jms {
			ready = append(ready, endpoint{c, jm})
		}
	}
	if len(ready) == 0 {
		return nil, nil, errorf(0, "no JobManager behind Service %s listens on port %d", k, port)
	}
	e.serviceRR[k]++
	ep := ready[e.serviceRR[k]%len(ready)]
	return ep.c, ep.jm, nil
}

// reached is the cluster and JobManager a connection reached, the
// JobManager nil once it no longer listens there: through the Service,
// while it is still one of its ready endpoints; at the pod, while its
// process serves.
func (e *Engine) reached(t target, now time.Time) (*cluster, *process) {
	c := e.clusters[t.cluster]
	if c == nil {
		return nil, nil
	}
	e.advance(c, now)
	if t.direct {
		for _, p := range c.jms {
			if p.id() == t.jm && p.serving() {
				return c, p
			}
		}
		return c, nil
	}
	ready, _ := c.restEndpoints(t.k.Name, t.servicePort())
	for _, p := range ready {
		if p.id() == t.jm {
			return c, p
		}
	}
	return c, nil
}

// dial is the JobManager a client connection to a Service reaches: the
// one it reached before, or a new pick for a new connection; a
// connection whose JobManager is gone is reset. The HTTP layer then reads
// the request the way that JobManager's Flink minor does.
func (e *Engine) dial(k ClusterKey, port int32, conn string) (target, flink.Version, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	t := target{k: k, port: port}
	sc := serviceConn{k, t.servicePort()}
	if r, ok := e.conns[conn][sc]; ok {
		t.cluster, t.jm = r.cluster, r.jm
		if _, jm := e.reached(t, now); jm != nil {
			return t, jm.version, nil
		}
		delete(e.conns[conn], sc)
		return target{}, flink.Version{}, errorf(0, "the JobManager this connection reached is gone")
	}
	c, jm, err := e.connect(k, sc.port, now)
	if err != nil {
		return target{}, flink.Version{}, err
	}
	t.cluster, t.jm = c.key, jm.id()
	if conn != "" {
		if e.conns[conn] == nil {
			e.conns[conn] = map[serviceConn]route{}
		}
		e.conns[conn][sc] = route{t.cluster, t.jm}
	}
	return t, jm.version, nil
}

// serviceConn is a Service's port, as a connection names it.
type serviceConn struct {
	svc  ClusterKey
	port int32
}

// route is the cluster and JobManager a connection reached.
type route struct {
	cluster ClusterKey
	jm      string
}

// dialPod is a connection to one JobManager pod at RESTPort, not through
// the Service: it reaches the pod's process whether or not the pod is
// Ready, if that process listens there.
func (e *Engine) dialPod(k ClusterKey, pod, uid string) (target, flink.Version, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	has := func(c *cluster) bool {
		for _, p := range c.jms {
			if p.pod.Name == pod {
				return true
			}
		}
		return false
	}
	c := e.clusters[k]
	if c == nil || !has(c) {
		c = firstByKey(e.jobManagerPods[ClusterKey{Namespace: k.Namespace, Name: pod}])
	}
	if c != nil {
		e.advance(c, e.now())
		for _, p := range c.jms {
			if p.pod.Name == pod && p.pod.UID == uid && p.serving() && p.restPort == RESTPort {
				return target{k: c.key, cluster: c.key, jm: p.id(), direct: true}, p.version, nil
			}
		}
	}
	return target{}, flink.Version{}, errorf(0, "nothing listens on JobManager pod %s port %d", pod, RESTPort)
}

// ConnClosed forgets a closed client connection.
func (e *Engine) ConnClosed(conn string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.conns, conn)
}

// dispatcherFor is the Dispatcher a request received by jm reaches through
// the leader retriever; while no leader is known the REST handler answers
// 503 (LeaderRetrievalHandler).
func (c *cluster) dispatcherFor(jm *process) (*dispatcher, error) {
	l := c.leaderOf(jm)
	if l == nil || l.d == nil {
		return nil, errorf(http.StatusServiceUnavailable, "Service temporarily unavailable due to an ongoing leader election. Please refresh.")
	}
	return l.d, nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newID is a Flink ID: 32 lowercase hex digits.
func newID() string { return randomHex(16) }

func uuid() string {
	h := randomHex(16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// officialImage reports whether an image is the official Flink image,
// whose opt/ directory is known.
func officialImage(image string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	switch repo {
	case "flink", "library/flink", "docker.io/library/flink", "docker.io/flink", "apache/flink", "docker.io/apache/flink":
		return true
	}
	return false
}

func splitPlugins(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ImageVersion extracts a major.minor.patch version from an image tag, or
// "" when the tag has none (latest, a digest, no tag).
func ImageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return ""
	}
	tag := image[colon+1:]
	end := 0
	for end < len(tag) && (tag[end] >= '0' && tag[end] <= '9' || tag[end] == '.') {
		end++
	}
	v := strings.TrimRight(tag[:end], ".")
	if strings.Count(v, ".") != 2 || strings.Contains(v, "..") {
		return ""
	}
	return v
}
