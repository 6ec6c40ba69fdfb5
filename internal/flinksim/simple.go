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
// official image of Version started as jobmanager and taskmanager, each
// mounting one configuration file from a ConfigMap at /opt/flink/conf, and
// a Service, named after the key the cluster is observed under, that
// selects the JobManager on its REST and RPC ports. The TaskManagers'
// jobmanager.rpc.address is that Service's address unless Settings names
// one.
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

// SimpleServiceAddress is the jobmanager.rpc.address a SimpleCluster's
// TaskManagers dial unless its Settings name one: its Service.
const SimpleServiceAddress = "jobmanager"

// Observation is what the Kubernetes API would show of the cluster.
func (s SimpleCluster) Observation() Observation {
	settings := map[string]string{"jobmanager.rpc.address": SimpleServiceAddress}
	for k, v := range s.Settings {
		settings[k] = v
	}
	files := ConfFiles(s.Version, settings)
	pod := func(uid string, age int, role Role) Pod {
		return Pod{
			UID: uid, Name: uid, Created: time.Unix(1700000000, 0).Add(time.Duration(age) * time.Second),
			Running: true, Ready: true, Image: "flink:" + s.Version, Role: role, Env: s.Env, Hostname: uid,
			Conf: files, Mounts: s.Mounts,
		}
	}
	net := staticNetwork{}
	o := Observation{Network: net, Services: []Service{{Ports: map[int32][]Endpoint{}}}}
	if s.JobManager != "" {
		jm := pod(s.JobManager, 0, RoleJobManager)
		jm.Ready = !s.NotReady
		o.JobManagers = []Pod{jm}
		if jm.Ready {
			// The Service publishes Ready pods only.
			o.Services[0].Ports[RESTPort] = []Endpoint{{Pod: jm.UID, Port: RESTPort}}
			o.Services[0].Ports[6123] = []Endpoint{{Pod: jm.UID, Port: 6123}}
			net[settings["jobmanager.rpc.address"]+":6123"] = []Endpoint{{Pod: jm.UID, Port: 6123}}
		}
	}
	for i, uid := range s.TaskManagers {
		o.TaskManagers = append(o.TaskManagers, pod(uid, i+1, RoleTaskManager))
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
