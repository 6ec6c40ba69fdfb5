package flinksim

import (
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
)

// Service is a Kubernetes Service as a client connecting to it sees it:
// a connection to one of its ports lands on one of its endpoints.
type Service struct {
	Name string
	// Ports maps each port of the Service to the endpoints a connection to
	// it reaches: the Ready pods its selector matches (all running ones
	// with publishNotReadyAddresses), at the targetPort each one resolves.
	Ports map[int32][]Endpoint
}

// Endpoint is one pod and the port a connection reaches on it.
type Endpoint struct {
	Pod  string // UID
	Port int32
}

// Network resolves what a process dials, host and port, to the endpoints
// the connection may land on, as the cluster's DNS and kube-proxy do.
type Network interface {
	Dial(host string, port int32) []Endpoint
}

// Role is the Flink process a container runs, by its entrypoint argument.
type Role string

const (
	RoleNone        Role = ""
	RoleJobManager  Role = "jobmanager"
	RoleTaskManager Role = "taskmanager"
	// RoleStandaloneJob is a JobManager that runs one application
	// (StandaloneApplicationClusterEntryPoint).
	RoleStandaloneJob Role = "standalone-job"
)

// ContainerRole is the Flink process a container of the official image
// starts. Without a command the image's ENTRYPOINT, docker-entrypoint.sh,
// runs and dispatches on its first argument: jobmanager, standalone-job
// and taskmanager start Flink; history-server, sql-gateway and help do
// not, and anything else runs as a plain command. A command that runs the
// entrypoint or one of Flink's start scripts itself is read the same way.
// It returns the role and the arguments the start script receives.
func ContainerRole(command, args []string) (Role, []string) {
	argv := append(append([]string{}, command...), args...)
	if len(command) > 0 {
		base := command[0][strings.LastIndex(command[0], "/")+1:]
		switch base {
		case "docker-entrypoint.sh":
			argv = argv[1:]
		case "jobmanager.sh", "taskmanager.sh", "standalone-job.sh":
			// bin/<role>.sh start-foreground [args]
			rest := argv[1:]
			if len(rest) == 0 || (rest[0] != "start-foreground" && rest[0] != "start") {
				return RoleNone, nil
			}
			return Role(strings.TrimSuffix(base, ".sh")), rest[1:]
		default:
			return RoleNone, nil
		}
	}
	if len(argv) == 0 {
		return RoleNone, nil
	}
	switch r := Role(argv[0]); r {
	case RoleJobManager, RoleTaskManager, RoleStandaloneJob:
		return r, argv[1:]
	}
	return RoleNone, nil
}

// startArgs is what a process takes from its start script's arguments.
type startArgs struct {
	host, restPort string
	dynamic        map[string]string
}

// parseStartArgs reads the arguments of the start script. jobmanager.sh
// takes an optional host and web UI port before any "-D" (its test is
// [[ $2 == "-D" ]], so "-Dk=v" in first place is taken as the host) and
// passes them as --host and --webui-port; ClusterEntrypoint then sets
// jobmanager.rpc.address and rest.port from them. Every script passes -D
// dynamic properties (DynamicParametersUtils: "-D k=v" or "-Dk=v"), which
// override the configuration file. StandaloneApplicationClusterEntryPoint
// reads --host/-h and --webui-port/-r itself.
func parseStartArgs(r Role, args []string) startArgs {
	out := startArgs{dynamic: map[string]string{}}
	if r == RoleJobManager {
		if len(args) > 0 && args[0] != "-D" {
			out.host, args = args[0], args[1:]
			if len(args) > 0 && args[0] != "-D" {
				out.restPort, args = args[0], args[1:]
			}
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-D" && i+1 < len(args):
			i++
			a = "-D" + args[i]
			fallthrough
		case strings.HasPrefix(a, "-D"):
			if k, v, ok := strings.Cut(a[2:], "="); ok {
				out.dynamic[k] = v
			}
		case r == RoleStandaloneJob && (a == "--host" || a == "-h") && i+1 < len(args):
			i++
			out.host = args[i]
		case r == RoleStandaloneJob && (a == "--webui-port" || a == "-r") && i+1 < len(args):
			i++
			out.restPort = args[i]
		}
	}
	return out
}

// imageConf is the conf directory the official image ships for a
// version: the distribution's default file.
func imageConf(v flink.Version) (map[string]string, error) {
	m, err := optionTable(v.Line().String())
	if err != nil {
		return nil, fmt.Errorf("Flink %s is not simulated: %w", v, err)
	}
	return map[string]string{m.DefaultConfName: string(m.DefaultConf)}, nil
}

// entrypointEdits is what the official image's docker-entrypoint.sh
// (prepare_configuration) writes into a writable conf directory before it
// starts Flink: jobmanager.rpc.address from $JOB_MANAGER_RPC_ADDRESS
// (default `hostname -f`), blob.server.port 6124, query.server.port 6125,
// taskmanager.numberOfTaskSlots from $TASK_MANAGER_NUMBER_OF_TASK_SLOTS,
// and the lines of $FLINK_PROPERTIES. It edits ${FLINK_HOME}/conf, not
// $FLINK_CONF_DIR, and a read-only directory (a ConfigMap volume) defeats
// every edit without stopping the entrypoint: the caller applies this only
// to a writable ${FLINK_HOME}/conf.
//
// 1.17, 1.18 (set_config_option): a line matching ^key: has "key:.*"
// replaced by sed (on every line containing it), else "key: value" is
// appended; $FLINK_PROPERTIES is appended as it is; then envsubst runs over
// the whole file. 1.19+ (set_config_options): the options go as -Dk=v to
// bin/config-parser-utils.sh, which loads the directory with Flink's own
// parser and writes the result back (an error, such as no file, writes
// nothing); $FLINK_PROPERTIES lines lose all whitespace, split at the
// first ':', and each value goes through envsubst.
func entrypointEdits(v flink.Version, files map[string]string, env map[string]string, hostname string) map[string]string {
	out := map[string]string{}
	for k, c := range files {
		out[k] = c
	}
	addr := env["JOB_MANAGER_RPC_ADDRESS"]
	if addr == "" {
		addr = hostname
	}
	opts := [][2]string{{"jobmanager.rpc.address", addr}, {"blob.server.port", "6124"}, {"query.server.port", "6125"}}
	if s := env["TASK_MANAGER_NUMBER_OF_TASK_SLOTS"]; s != "" {
		opts = append(opts, [2]string{"taskmanager.numberOfTaskSlots", s})
	}
	if !v.AtLeast(1, 19) {
		name := flinkconf.LegacyFileName
		text, exists := out[name]
		for _, o := range opts {
			if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(o[0]) + `:.*`).MatchString(text) {
				text = regexp.MustCompile(regexp.QuoteMeta(o[0])+`:.*`).ReplaceAllLiteralString(text, o[0]+": "+o[1])
			} else {
				if exists && text != "" && !strings.HasSuffix(text, "\n") {
					text += "\n"
				}
				text += o[0] + ": " + o[1] + "\n"
				exists = true
			}
		}
		if p := env["FLINK_PROPERTIES"]; p != "" {
			text += p + "\n"
		}
		out[name] = envsubst(text, env)
		return out
	}
	name := flinkconf.YAMLFileName
	if _, ok := out[flinkconf.LegacyFileName]; ok && !v.AtLeast(2, 0) {
		name = flinkconf.LegacyFileName
	}
	content, ok := out[name]
	if !ok {
		return out
	}
	values, err := flinkconf.Parse(name, []byte(content))
	if err != nil {
		return out
	}
	for _, o := range opts {
		values[o[0]] = o[1]
	}
	for _, line := range strings.Split(env["FLINK_PROPERTIES"], "\n") {
		line = strings.Join(strings.Fields(line), "")
		if k, val, ok := strings.Cut(line, ":"); ok && k != "" {
			values[k] = envsubst(val, env)
		}
	}
	out[name] = renderConf(name, values)
	return out
}

// envsubst replaces $VAR and ${VAR} with the environment's value, empty
// when unset, as GNU gettext's envsubst does.
func envsubst(s string, env map[string]string) string {
	return os.Expand(s, func(k string) string { return env[k] })
}

func renderConf(name string, values map[string]string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		key, v := k, values[k]
		if name == flinkconf.YAMLFileName {
			key, v = flinkconf.YAMLScalar(key), flinkconf.YAMLScalar(v)
		}
		fmt.Fprintf(&b, "%s: %s\n", key, v)
	}
	return b.String()
}

// podConf is the configuration a Flink process in the pod starts with:
// the conf directory as the entrypoint left it, then the start script's
// arguments (ClusterEntrypoint#loadConfiguration, TaskManagerRunner#
// loadConfiguration: dynamic properties over the file, --host and
// --webui-port over both).
func podConf(v flink.Version, pod Pod, role Role) (*conf, error) {
	if pod.NoConfDir {
		return loadConf(v, nil, pod.ConfDir)
	}
	files := pod.Conf
	if files == nil || pod.ConfOverImage {
		image, err := imageConf(v)
		if err != nil {
			return nil, err
		}
		for k, c := range files {
			image[k] = c
		}
		files = image
	}
	if pod.ConfWritable {
		files = entrypointEdits(v, files, pod.Env, pod.Hostname)
	}
	c, err := loadConf(v, files, pod.ConfDir)
	if err != nil {
		return nil, err
	}
	a := parseStartArgs(role, pod.StartArgs)
	for k, val := range a.dynamic {
		c.values[k] = val
	}
	if a.host != "" {
		c.values["jobmanager.rpc.address"] = a.host
	}
	if a.restPort != "" {
		c.values["rest.port"] = a.restPort
	}
	return c, nil
}

// port is an int option such as jobmanager.rpc.port.
func (c *conf) port(option string) (int32, error) {
	n, err := c.integer(option)
	return int32(n), err
}

// bindPort is the port a server listens on: its bind-port option when set
// (a single port; a range takes its first), else the advertised port
// (RestOptions.BIND_PORT and JobManagerOptions.RPC_BIND_PORT fall back to
// rest.port and jobmanager.rpc.port).
func (c *conf) bindPort(bind, advertised string) (int32, error) {
	if v, ok := c.raw(bind); ok && strings.TrimSpace(v) != "" {
		first, _, _ := strings.Cut(strings.Split(v, ",")[0], "-")
		n, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil {
			return 0, parseErr(bind, v, err)
		}
		return int32(n), nil
	}
	return c.port(advertised)
}

// register connects each serving TaskManager to the ResourceManager it
// finds. With high availability that is the leader of its HA services'
// identity (the ResourceManager leader retriever of ZooKeeper or
// Kubernetes HA). Without, StandaloneHaServices points it at
// jobmanager.rpc.address:jobmanager.rpc.port (HighAvailabilityServicesUtils
// #getJobManagerAddress), which the network resolves to a pod; the pod's
// JobManager must listen on that port, and Pekko remoting accepts only
// messages addressed to its own canonical address, the JobManager's
// jobmanager.rpc.address (a TaskManager dialling "svc" reaches nothing on a
// JobManager that calls itself by its pod IP: "dropping message for
// non-local recipient"). A TaskManager keeps the JobManager it reached
// while that one serves; a new connection lands on one endpoint, chosen
// here by the TaskManager's pod UID, as kube-proxy picks one at random.
func (c *cluster) register() {
	for _, t := range c.tms {
		t.rm = c.resourceManagerFor(t)
	}
}

func (c *cluster) resourceManagerFor(t *process) string {
	if !t.serving() {
		return ""
	}
	if t.ha != nil {
		s := c.ha[t.ha.identity]
		if s == nil || (t.ha.mode == "KUBERNETES" && t.pod.KubernetesAccess != "") {
			// KubernetesLeaderRetrievalDriver cannot watch the leader
			// ConfigMap: the TaskManager never learns a leader.
			return ""
		}
		return s.leader
	}
	if c.net == nil {
		return ""
	}
	var reach []*process
	for _, ep := range c.net.Dial(t.rpcHost, t.rpcPort) {
		for _, jm := range c.jms {
			if jm.pod.UID == ep.Pod && jm.serving() && jm.ha == nil && jm.rpcPort == ep.Port && jm.rpcHost == t.rpcHost {
				if jm.id() == t.rm {
					return t.rm
				}
				reach = append(reach, jm)
			}
		}
	}
	if len(reach) == 0 {
		return ""
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(t.pod.UID))
	return reach[int(h.Sum32()%uint32(len(reach)))].id()
}

// restEndpoints are the JobManagers a connection to the Service's port
// reaches: those listening there on their REST port.
func (c *cluster) restEndpoints(svc string, port int32) ([]*process, bool) {
	for _, s := range c.services {
		if s.Name != svc {
			continue
		}
		var out []*process
		for _, ep := range s.Ports[port] {
			for _, jm := range c.jms {
				if jm.pod.UID == ep.Pod && jm.serving() && jm.restPort == ep.Port {
					out = append(out, jm)
				}
			}
		}
		return out, true
	}
	return nil, false
}

// staticNetwork is a Network given as a table, for callers that feed the
// Engine themselves.
type staticNetwork map[string][]Endpoint

func (n staticNetwork) Dial(host string, port int32) []Endpoint {
	return n[host+":"+strconv.Itoa(int(port))]
}

// The official image's paths: FLINK_HOME is /opt/flink, and bin/config.sh
// reads the configuration from $FLINK_CONF_DIR, default $FLINK_HOME/conf.
const (
	defaultFlinkHome = "/opt/flink"
	defaultConfDir   = defaultFlinkHome + "/conf"
)

// role is the pod's JobManager role: jobmanager unless the entrypoint
// was told standalone-job.
func (p Pod) role() Role {
	if p.Role == RoleStandaloneJob {
		return RoleStandaloneJob
	}
	return RoleJobManager
}
