package flinksim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
)

// SimpleCluster describes a cluster for callers that feed the Engine
// themselves (tests of the engine and of its clients): pods of the
// official image of Version, each mounting one configuration file.
type SimpleCluster struct {
	// Version is the Flink version, such as 1.19.1.
	Version string
	// JobManager is the JobManager pod's UID (and name); empty for none.
	JobManager string
	// TaskManagers are the TaskManager pods' UIDs (and names).
	TaskManagers []string
	// Settings are the configuration file's keys. The process sizes Flink
	// needs to start are added unless Settings names a memory option.
	Settings map[string]string
	// NotReady makes the JobManager pod run but not be Ready.
	NotReady bool
	// Mounts are every pod's volumes besides the configuration.
	Mounts []Mount
	// Env is every Flink container's environment.
	Env map[string]string
}

// Observation is what the Kubernetes API would show of the cluster.
func (s SimpleCluster) Observation() Observation {
	files := ConfFiles(s.Version, s.Settings)
	pod := func(uid string, age int) Pod {
		return Pod{
			UID: uid, Name: uid, Created: time.Unix(1700000000, 0).Add(time.Duration(age) * time.Second),
			Running: true, Ready: true, Image: "flink:" + s.Version, Env: s.Env, Conf: files, Mounts: s.Mounts,
		}
	}
	var o Observation
	if s.JobManager != "" {
		jm := pod(s.JobManager, 0)
		jm.Ready = !s.NotReady
		o.JobManagers = []Pod{jm}
	}
	for i, uid := range s.TaskManagers {
		o.TaskManagers = append(o.TaskManagers, pod(uid, i+1))
	}
	return o
}

// ConfFiles renders settings as the configuration file the version reads
// (flink-conf.yaml before 1.19, config.yaml from 1.19), adding
// jobmanager.memory.process.size and taskmanager.memory.process.size
// unless settings name a memory option of their own.
func ConfFiles(version string, settings map[string]string) map[string]string {
	all := map[string]string{}
	memory := false
	for k, v := range settings {
		all[k] = v
		memory = memory || strings.Contains(k, ".memory.") || strings.Contains(k, ".heap.")
	}
	if !memory {
		all["jobmanager.memory.process.size"] = "1600m"
		all["taskmanager.memory.process.size"] = "1728m"
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	name, yaml := flinkconf.LegacyFileName, false
	if v, err := flink.ParseVersion(version); err == nil && v.AtLeast(1, 19) {
		name, yaml = flinkconf.YAMLFileName, true
	}
	var b strings.Builder
	for _, k := range keys {
		key, v := k, all[k]
		if yaml {
			key, v = flinkconf.YAMLScalar(key), flinkconf.YAMLScalar(v)
		}
		fmt.Fprintf(&b, "%s: %s\n", key, v)
	}
	return map[string]string{name: b.String()}
}
