// Package lifecycle decides, without side effects, how a FlinkCluster with a
// job moves from one spec to the next: which change it is, when state must
// be made safe, what to deploy, when an upgrade is stable and when it rolls
// back. The controller performs the actions it returns.
package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Change is the kind of difference between the deployed and desired spec.
type Change string

const (
	// ChangeNone: nothing that touches pods or the job.
	ChangeNone Change = "None"
	// ChangeScale: only the TaskManager count.
	ChangeScale Change = "Scale"
	// ChangeJob: the job's definition; pods stay, the job is resubmitted.
	ChangeJob Change = "JobChange"
	// ChangeConfigRoll: configuration or resources; the pods roll.
	ChangeConfigRoll Change = "ConfigRoll"
	// ChangeUpgrade: the Flink version or image.
	ChangeUpgrade Change = "Upgrade"
	// ChangeRescale: the autopilot's new job parallelism (and the
	// TaskManagers it needs). It takes the upgrade path (savepoint,
	// resubmission, gate, rollback); a failed one does not mark the
	// generation failed, since the autopilot reverts its own target.
	ChangeRescale Change = "Rescale"
	// ChangeRemoval: spec.job removed. Its job stops with a savepoint,
	// recorded in status.job for a returning spec.job, then the pods roll.
	ChangeRemoval Change = "JobRemoval"
	// ChangeRescaleInPlace is a Rescale through the adaptive scheduler's
	// resource requirements: the job keeps running, no savepoint.
	ChangeRescaleInPlace Change = "RescaleInPlace"
)

// IsRescale reports whether an upgrade kind is the autopilot's rescale.
func IsRescale(kind string) bool {
	return kind == string(ChangeRescale) || kind == string(ChangeRescaleInPlace)
}

// parallelismOnly reports whether two specs differ in the job's
// parallelism (its own and its vertices') and the TaskManager count alone.
func parallelismOnly(a, b *v1.FlinkClusterSpec) bool {
	if a == nil || b == nil || a.Job == nil || b.Job == nil {
		return false
	}
	x, y := a.DeepCopy(), b.DeepCopy()
	x.Job.Parallelism, y.Job.Parallelism = 0, 0
	x.Job.VertexParallelism, y.Job.VertexParallelism = nil, nil
	x.TaskManager.Replicas, y.TaskManager.Replicas = 0, 0
	return Classify(x, y) == ChangeNone
}

// Classify names the change from deployed to desired. Settings that steer
// the operator (job state, savepoint schedule, policies) are not changes of
// the cluster: they never restart anything.
func Classify(deployed, desired *v1.FlinkClusterSpec) Change {
	if deployed == nil {
		return ChangeNone
	}
	a, b := normalize(deployed), normalize(desired)
	if a.Version != b.Version || a.Image != b.Image {
		return ChangeUpgrade
	}
	jobA, jobB := a.Job, b.Job
	a.Job, b.Job = nil, nil
	ra, rb := a.TaskManager.Replicas, b.TaskManager.Replicas
	a.TaskManager.Replicas, b.TaskManager.Replicas = 0, 0
	switch {
	case !equality.Semantic.DeepEqual(a, b):
		return ChangeConfigRoll
	case !equality.Semantic.DeepEqual(jobA, jobB):
		return ChangeJob
	case ra != rb:
		return ChangeScale
	}
	return ChangeNone
}

// normalize copies a spec without the fields that steer the operator.
func normalize(s *v1.FlinkClusterSpec) *v1.FlinkClusterSpec {
	c := s.DeepCopy()
	c.UpgradePolicy, c.Health = nil, nil
	if c.Job != nil {
		c.Job.State = ""
		c.Job.SavepointInterval = ""
		c.Job.SavepointTriggerNonce = 0
		c.Job.SavepointRetention = 0
		c.Job.InitialSavepointPath = ""
	}
	return c
}

// needsState says how state must be made safe before a change, by mode:
// a version change always takes a savepoint (checkpoints are not portable
// across versions); last-state rolls take a checkpoint, as the reference
// design's upgrade path does, where the running Flink can trigger one over
// REST (POST /jobs/{jobid}/checkpoints, in the REST API from 1.17, the
// oldest supported minor; a savepoint stands in for an unparsable
// version); stateless takes nothing.
func needsState(change Change, mode v1.UpgradeMode, running string) (savepoint, checkpoint bool) {
	switch {
	case change == ChangeScale || change == ChangeNone:
		return false, false
	case mode == v1.UpgradeStateless:
		return false, false
	case change == ChangeUpgrade || change == ChangeJob || change == ChangeRescale || mode == v1.UpgradeSavepoint:
		return true, false
	}
	if v, err := flink.ParseVersion(running); err != nil || !v.AtLeast(1, 17) {
		return true, false
	}
	return false, true
}
