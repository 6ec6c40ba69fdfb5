package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Paths inside the Flink containers.
const (
	FlinkHome     = "/opt/flink"
	ConfDir       = FlinkHome + "/conf"
	DataDir       = "/flink-data"
	KafkaTLSDir   = FlinkHome + "/secrets/kafka-tls"
	KafkaSASLDir  = FlinkHome + "/secrets/kafka-sasl"
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
func RenderConfig(fc *v1.FlinkCluster) (FlinkConfig, error) {
	ver, err := flink.ParseVersion(fc.Spec.Version)
	if err != nil {
		return FlinkConfig{}, err
	}
	keys := flink.KeysFor(ver)
	s := map[string]string{}
	// User settings first: every operator-owned key below overwrites them
	// (admission already refuses those keys; this keeps old objects safe).
	for k, v := range fc.Spec.FlinkConfiguration {
		s[k] = v
	}
	s["jobmanager.rpc.address"] = JobManagerName(fc)
	s["jobmanager.rpc.port"] = strconv.Itoa(PortRPC)
	s["blob.server.port"] = strconv.Itoa(PortBlob)
	s["rest.port"] = strconv.Itoa(PortREST)
	s["rest.address"] = JobManagerName(fc)
	s["rest.bind-address"] = "0.0.0.0"
	s["jobmanager.bind-host"] = "0.0.0.0"
	s["taskmanager.bind-host"] = "0.0.0.0"
	s["taskmanager.rpc.port"] = "6122"
	s["taskmanager.numberOfTaskSlots"] = strconv.Itoa(int(slots(fc)))
	if mem, ok := fc.Spec.JobManager.Resources.Limits[corev1.ResourceMemory]; ok {
		s["jobmanager.memory.process.size"] = mebibytes(mem.Value())
	}
	if mem, ok := fc.Spec.TaskManager.Resources.Limits[corev1.ResourceMemory]; ok {
		s["taskmanager.memory.process.size"] = mebibytes(mem.Value())
	}

	if cp := fc.Spec.Checkpointing; cp != nil {
		s[keys.CheckpointInterval] = cp.Interval
		retention := cp.Retention
		if retention < 1 {
			retention = 1
		}
		s[keys.CheckpointsRetained] = strconv.Itoa(int(retention))
	}
	s[keys.CheckpointsDir] = orDefault(checkpointsDir(fc), "file://"+DataDir+"/checkpoints")
	s[keys.SavepointsDir] = SavepointsDir(fc)

	if ha := fc.Spec.HighAvailability; ha != nil && ha.Mode != v1.HighAvailabilityNone {
		s[keys.HighAvailabilityType] = keys.HighAvailabilityValue[string(ha.Mode)]
		s["high-availability.storageDir"] = orDefault(ha.StorageDir, "file://"+DataDir+"/ha")
		s["high-availability.cluster-id"] = fc.Namespace + "-" + fc.Name
		switch ha.Mode {
		case v1.HighAvailabilityZookeeper:
			s["high-availability.zookeeper.quorum"] = ha.Zookeeper.ConnectString
		case v1.HighAvailabilityKubernetes:
			s["kubernetes.cluster-id"] = fc.Name
			s["kubernetes.namespace"] = fc.Namespace
		}
	}

	content := renderFile(s, keys.YAML)
	sum := sha256.Sum256([]byte(keys.File + "\x00" + content + "\x00" + log4jConsole))
	return FlinkConfig{FileName: keys.File, Settings: s, Hash: hex.EncodeToString(sum[:8])}, nil
}

// SavepointsDir is where the cluster writes savepoints.
func SavepointsDir(fc *v1.FlinkCluster) string {
	if cp := fc.Spec.Checkpointing; cp != nil && cp.SavepointsDir != "" {
		return cp.SavepointsDir
	}
	return "file://" + DataDir + "/savepoints"
}

func checkpointsDir(fc *v1.FlinkCluster) string {
	if cp := fc.Spec.Checkpointing; cp != nil {
		return cp.CheckpointsDir
	}
	return ""
}

// Files returns the ConfigMap data for the rendered configuration.
func (c FlinkConfig) Files() map[string]string {
	return map[string]string{
		c.FileName:    renderFile(c.Settings, c.FileName == "config.yaml"),
		log4jFileName: log4jConsole,
	}
}

// renderFile writes one "key: value" line per setting in key order, so the
// same settings always render to the same bytes (and the same hash).
func renderFile(s map[string]string, yamlQuoting bool) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Rendered by Datapilot from the FlinkCluster spec; edits are overwritten.\n")
	for _, k := range keys {
		v := s[k]
		if yamlQuoting {
			v = yamlScalar(v)
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	return b.String()
}

// yamlScalar quotes a value unless it is plainly safe, so config.yaml
// parses every value as the string the user wrote.
func yamlScalar(v string) string {
	safe := v != ""
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			safe = false
			break
		}
	}
	if safe {
		return v
	}
	return strconv.Quote(v)
}

func mebibytes(bytes int64) string { return strconv.FormatInt(bytes/(1<<20), 10) + "m" }

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
