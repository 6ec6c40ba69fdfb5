package flink

import (
	"fmt"
	"strings"
)

// OwnedKeys are the configuration keys the operator renders from the spec
// or relies on (ports it probes, addresses it resolves), with every
// deprecated or fallback key a supported minor still reads in their place
// (from each minor's deprecated_keys.tsv). A user may not set them in
// spec.flinkConfiguration: rendering would overwrite them, or Flink would
// read them instead of what the operator rendered. The admission rule in
// the CRD (OwnedKeysRule) and rendering both follow this list; tests check
// that every key rendering writes is in it, for every supported minor.
var OwnedKeys = []string{
	// Addresses and ports the Services and probes are built around.
	"jobmanager.rpc.address", "jobmanager.rpc.port", "jobmanager.rpc.bind-port", "jobmanager.bind-host",
	"blob.server.port",
	"rest.port", "rest.bind-port", "rest.address", "rest.bind-address",
	"web.port", "web.address", "jobmanager.web.address", "jobmanager.web.port",
	"taskmanager.bind-host", "taskmanager.rpc.port", "taskmanager.rpc.bind-port",
	// Topology and memory, from spec.taskManager and the containers' resources.
	"taskmanager.numberOfTaskSlots",
	"jobmanager.memory.process.size", "taskmanager.memory.process.size",
	// Checkpointing, from spec.checkpointing and the shared storage.
	"execution.checkpointing.interval",
	"execution.checkpointing.num-retained", "state.checkpoints.num-retained",
	"execution.checkpointing.dir", "state.checkpoints.dir", "state.backend.fs.checkpointdir",
	"execution.checkpointing.savepoint-dir", "state.savepoints.dir", "savepoints.state.backend.fs.dir",
	// Kubernetes high availability's identity.
	"kubernetes.cluster-id", "kubernetes.namespace",
}

// OwnedPrefixes own every key that starts with them: all of high
// availability, and its pre-1.x spelling (recovery.*) that Flink still
// reads as deprecated keys.
var OwnedPrefixes = []string{"high-availability", "recovery."}

// LastStateRetentionKey is owned when spec.job.upgradeMode is last-state:
// the operator sets it to RETAIN_ON_CANCELLATION so the checkpoint a
// last-state upgrade restores from survives the cancel.
const LastStateRetentionKey = "execution.checkpointing.externalized-checkpoint-retention"

// Owned reports whether the operator owns key.
func Owned(key string) bool {
	for _, k := range OwnedKeys {
		if k == key {
			return true
		}
	}
	for _, p := range OwnedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// ownedCondition is the CEL condition "k is owned".
func ownedCondition() string {
	quoted := make([]string, len(OwnedKeys))
	for i, k := range OwnedKeys {
		quoted[i] = "'" + k + "'"
	}
	parts := []string{fmt.Sprintf("k in [%s]", strings.Join(quoted, ", "))}
	for _, p := range OwnedPrefixes {
		parts = append(parts, fmt.Sprintf("k.startsWith('%s')", p))
	}
	return strings.Join(parts, " || ")
}

// OwnedKeysRule is the CEL rule on spec.flinkConfiguration that refuses
// every owned key, and OwnedKeysMessage the message naming them.
func OwnedKeysRule() string { return fmt.Sprintf("!self.exists(k, %s)", ownedCondition()) }

// OwnedKeysMessage names the refused keys.
func OwnedKeysMessage() string {
	return fmt.Sprintf("'spec.flinkConfiguration must not set ' + self.filter(k, %s)[0] + ': the operator renders it from the spec (addresses, ports, slots, memory, checkpointing, storage, high availability); use the dedicated spec fields'", ownedCondition())
}
