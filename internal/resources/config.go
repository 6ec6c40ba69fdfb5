package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
)

// Paths inside the Flink containers.
const (
	FlinkHome = "/opt/flink"
	ConfDir   = FlinkHome + "/conf"
	DataDir   = "/flink-data"
	// The Kafka secrets sit where the reference design's charts mount them
	// (section 3.4), outside the image's own tree.
	KafkaTLSDir   = "/etc/flink/kafka-tls"
	KafkaSASLDir  = "/etc/flink/kafka-sasl"
	log4jFileName = "log4j-console.properties"
)

// log4jConsole replaces the image's logging config, which the ConfigMap
// mount over conf/ would otherwise hide: logs go to stdout, where kubectl
// logs and the platform's collectors read them.
const log4jConsole = `rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF
`

// FlinkConfig is the rendered configuration of one cluster.
type FlinkConfig struct {
	// FileName is flink-conf.yaml or config.yaml, as the version reads.
	FileName string
	// Settings is every key the cluster runs with.
	Settings map[string]string
	// Hash identifies the rendered files; it rolls the pods when it changes.
	Hash string
}

// RenderConfig maps the spec's intent onto the Flink keys of its version.
// Every key it writes is in flink.OwnedKeys, which admission refuses in
// spec.flinkConfiguration; tests hold both to that for every minor.
func RenderConfig(fc *v1.FlinkCluster, p Platform) (FlinkConfig, error) {
	ver, err := flink.ParseVersion(fc.Spec.Version)
	if err != nil {
		return FlinkConfig{}, err
	}
	keys := flink.KeysFor(ver)
	s := map[string]string{}
	// User settings first: every operator-owned key below overwrites them
	// (admission already refuses those keys; this keeps old objects safe).
	// An older object's restore path, claim mode or ignore-unclaimed-state
	// is dropped: no key below overwrites those, and a configured path
	// would restore every submission that names none from it.
	for k, v := range fc.Spec.FlinkConfiguration {
		if flink.RestoreKey(k) && k != keys.CheckpointRetention {
			continue
		}
		s[k] = string(v)
	}
	s["jobmanager.rpc.address"] = JobManagerName(fc)
	s["jobmanager.rpc.port"] = strconv.Itoa(PortRPC)
	s["blob.server.port"] = strconv.Itoa(PortBlob)
	s["rest.port"] = strconv.Itoa(PortREST)
	s["rest.address"] = JobManagerName(fc)
	s["rest.bind-address"] = "0.0.0.0"
	s["jobmanager.bind-host"] = "0.0.0.0"
	s["taskmanager.bind-host"] = "0.0.0.0"
	s["taskmanager.rpc.port"] = strconv.Itoa(PortTaskManagerRPC)
	s["taskmanager.numberOfTaskSlots"] = strconv.Itoa(int(slots(fc)))
	s["jobmanager.memory.process.size"] = flinkMemory(jobManagerMemory(fc))
	s["taskmanager.memory.process.size"] = flinkMemory(taskManagerMemory(fc))

	if cp := fc.Spec.Checkpointing; cp != nil {
		s[keys.CheckpointInterval] = cp.Interval
		s[keys.CheckpointsRetained] = strconv.Itoa(int(max(cp.Retention, 1)))
	}
	if fc.Spec.Job != nil {
		// A job's checkpoints must outlive its end for every restore the
		// operator makes from them: healing a failed job, restarting a
		// running one (a cancel), a last-state upgrade, a job lost with a
		// JobManager stopped gracefully (SUSPENDED). CheckpointProperties:
		// only RETAIN_ON_CANCELLATION keeps them on CANCELED and
		// SUSPENDED (NO_EXTERNALIZED_CHECKPOINTS, Flink's default,
		// discards on every end; DELETE_ON_CANCELLATION on cancel and
		// suspension). The key is the operator's (admission refuses it);
		// an older object's own value is overwritten here.
		s[keys.CheckpointRetention] = "RETAIN_ON_CANCELLATION"
	}
	st := StateOf(fc, p)
	s[keys.CheckpointsDir] = st.Checkpoints
	s[keys.SavepointsDir] = st.Savepoints

	if ha := fc.Spec.HighAvailability; ha != nil && ha.Mode != v1.HighAvailabilityNone {
		s[keys.HighAvailabilityType] = string(ha.Mode)
		s["high-availability.storageDir"] = st.HA
		id := HAIdentity(fc)
		s["high-availability.cluster-id"] = id.ClusterID
		s[flink.JobResultDeleteOnCommitKey] = "false"
		switch ha.Mode {
		case v1.HighAvailabilityZookeeper:
			s["high-availability.zookeeper.quorum"] = ha.Zookeeper.ConnectString
		case v1.HighAvailabilityKubernetes:
			s["kubernetes.cluster-id"] = id.KubernetesClusterID
			s["kubernetes.namespace"] = fc.Namespace
		}
	}

	if !keys.YAML {
		if err := legacyCarriesAll(s, keys.File); err != nil {
			return FlinkConfig{}, fmt.Errorf("Flink %s: %w", fc.Spec.Version, err)
		}
	}
	content := renderFile(s, keys.YAML)
	sum := sha256.Sum256([]byte(keys.File + "\x00" + content + "\x00" + log4jConsole))
	return FlinkConfig{FileName: keys.File, Settings: s, Hash: hex.EncodeToString(sum[:8])}, nil
}

// legacyCarriesAll refuses a setting that flink-conf.yaml, which Flink
// reads line by line without quoting, cannot carry: a line break in it
// would set other keys. Admission refuses such values in every field that
// reaches the file; this holds for objects that bypassed it (a v1alpha1
// annotation, an old object, the platform's storage setting).
func legacyCarriesAll(s map[string]string, file string) error {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := flinkconf.LegacyCarries(k, s[k]); err != nil {
			return fmt.Errorf("%s cannot carry %s: %w", file, k, err)
		}
	}
	return nil
}

func jobManagerMemory(fc *v1.FlinkCluster) resource.Quantity {
	return processMemory(fc.Spec.JobManager.Resources, DefaultJobManagerMemory)
}

func taskManagerMemory(fc *v1.FlinkCluster) resource.Quantity {
	return processMemory(fc.Spec.TaskManager.Resources, DefaultTaskManagerMemory)
}

// SavepointsDir is where the cluster writes savepoints.
func SavepointsDir(fc *v1.FlinkCluster, p Platform) string { return StateOf(fc, p).Savepoints }

// Files returns the ConfigMap data for the rendered configuration.
func (c FlinkConfig) Files() map[string]string {
	return map[string]string{
		c.FileName:    renderFile(c.Settings, c.FileName == "config.yaml"),
		log4jFileName: log4jConsole,
	}
}

// renderFile writes one "key: value" line per setting in key order, so the
// same settings always render to the same bytes (and the same hash). In
// config.yaml keys and values are YAML scalars that Flink reads back as
// exactly the string set here; flink-conf.yaml takes them verbatim.
func renderFile(s map[string]string, yamlQuoting bool) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Rendered by Datapilot from the FlinkCluster spec; edits are overwritten.\n")
	for _, k := range keys {
		key, v := k, s[k]
		if yamlQuoting {
			key, v = flinkconf.YAMLScalar(key), flinkconf.YAMLScalar(v)
		}
		fmt.Fprintf(&b, "%s: %s\n", key, v)
	}
	return b.String()
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func slots(fc *v1.FlinkCluster) int32 {
	if fc.Spec.TaskManager.Slots < 1 {
		return 1
	}
	return fc.Spec.TaskManager.Slots
}
