package flink

import (
	"fmt"
	"slices"
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
	// High availability keeps the results of ended jobs (JobResultDeleteOnCommitKey).
	JobResultDeleteOnCommitKey,
}

// JobResultDeleteOnCommitKey says whether Flink's file job result store
// deletes a job's entry once the job is cleaned up (true by default, the
// same key in every supported minor; 2.3 renames it to
// application-result-store.delete-on-commit). The operator renders false
// with high availability: an entry kept makes Dispatcher#submitJob refuse
// the same job ID as globally terminated, so a job that ended unseen is
// never run again from its start (lifecycle's neverGot resends a job
// Flink does not show under its ID). Without high availability the
// embedded store keeps entries for the JobManager's life anyway.
const JobResultDeleteOnCommitKey = "job-result-store.delete-on-commit"

// OwnedPrefixes own every key that starts with them: all of high
// availability, and its pre-1.x spelling (recovery.*) that Flink still
// reads as deprecated keys.
var OwnedPrefixes = []string{"high-availability", "recovery."}

// LastStateRetentionKey says whether a cancel deletes the job's
// checkpoints; it is one of the RestoreKeys. Every supported minor spells
// it the same, without a deprecated key.
const LastStateRetentionKey = "execution.checkpointing.externalized-checkpoint-retention"

// RestoreKeys decide which snapshot a job restores from and whether Flink
// may delete it, with the deprecated key each 1.20+ option still reads
// (StateRecoveryOptions): the path to restore from (a configured one
// applies to every submission that names none), the claim mode (CLAIM
// makes the restored snapshot one of the job's checkpoints, which Flink
// deletes once newer ones subsume it: the savepoint a rollback needs),
// whether state that maps to no operator is dropped, and the checkpoint
// retention. The operator decides each from the spec and the snapshots it
// recorded, so a user may not set them; admission says so with its own
// message (RestoreKeysRule).
var RestoreKeys = []string{
	"execution.savepoint.path", "execution.state-recovery.path",
	"execution.savepoint-restore-mode", "execution.state-recovery.claim-mode",
	"execution.savepoint.ignore-unclaimed-state", "execution.state-recovery.ignore-unclaimed-state",
	LastStateRetentionKey,
}

// Owned reports whether the operator owns key.
func Owned(key string) bool {
	if slices.Contains(OwnedKeys, key) || RestoreKey(key) {
		return true
	}
	for _, p := range OwnedPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// RestoreKey reports whether key is one of the RestoreKeys.
func RestoreKey(key string) bool { return slices.Contains(RestoreKeys, key) }

// inList is the CEL condition "k is one of keys".
func inList(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = "'" + k + "'"
	}
	return fmt.Sprintf("k in [%s]", strings.Join(quoted, ", "))
}

// ownedCondition is the CEL condition "k is one of OwnedKeys or
// OwnedPrefixes".
func ownedCondition() string {
	parts := []string{inList(OwnedKeys)}
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

// RestoreKeysRule is the CEL rule on spec.flinkConfiguration that refuses
// the RestoreKeys, and RestoreKeysMessage the message naming the first.
func RestoreKeysRule() string { return fmt.Sprintf("!self.exists(k, %s)", inList(RestoreKeys)) }

// RestoreKeysMessage names the refused key and why.
func RestoreKeysMessage() string {
	return fmt.Sprintf("'spec.flinkConfiguration must not set ' + self.filter(k, %s)[0] + ': it decides which savepoint or checkpoint the job restores from, or lets Flink delete one the operator recorded to restore or roll back from; the operator sets it (the claim mode is always NO_CLAIM); use spec.job.initialSavepointPath and spec.job.allowNonRestoredState'", inList(RestoreKeys))
}

// ParallelismOverridesKey is PipelineOptions#PARALLELISM_OVERRIDES
// (1.17+): a map of job vertex ID to parallelism that the Dispatcher
// applies to a submitted job graph (Dispatcher#applyParallelismOverrides).
const ParallelismOverridesKey = "pipeline.jobvertex-parallelism-overrides"

// ReadsRequestOverrides: a jar run request's ParallelismOverridesKey (in
// its flinkConfiguration) reaches the Dispatcher of v. The request's
// configuration is the program's (JarHandlerContext#applyToConfiguration,
// 1.17+), but the JobGraph carries the overrides only since FLINK-33534
// (FlinkPipelineTranslationUtil#getJobGraph: 1.18.1, and 1.19+); before,
// the Dispatcher reads its own configuration alone, and a request's
// overrides change nothing.
func (v Version) ReadsRequestOverrides() bool {
	return v.AtLeast(1, 19) || (v.Major == 1 && v.Minor == 18 && v.Patch >= 1)
}
