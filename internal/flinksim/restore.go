package flinksim

import "fmt"

// Whether a snapshot fits the job that restores it: its operators must be
// the job's, at the max parallelism their key groups were written for.

// operatorStates is what a snapshot of the job records of its operators:
// each vertex's head operator (the simulator models no other operator of
// a chain) with the vertex's max parallelism now, and whether it has state
// (PendingCheckpoint#finalizeCheckpoint writes an OperatorState for every
// operator, empty for a stateless one).
func (j *job) operatorStates() []operatorState {
	out := make([]operatorState, 0, len(j.vertices))
	for _, v := range j.vertices {
		out = append(out, operatorState{id: v.id, maxParallelism: v.maxParallelism, state: v.stateful})
	}
	return out
}

// canRescaleMax is VertexParallelismInformation#canRescaleMaxParallelism
// as SchedulerBase#computeVertexParallelismStore builds it: a max
// parallelism Flink computed may be replaced by the restored state's, one
// the program set may not.
func (v *vertex) canRescaleMax(maxParallelism int) bool {
	return !v.explicitMax && maxParallelism > 0
}

// loadAndValidate is Checkpoints#loadAndValidateCheckpoint, which
// CheckpointCoordinator#restoreSavepoint runs when a job is submitted with
// a savepoint (or retained checkpoint) to restore: every operator state
// must map to an operator of the new job graph at the same max
// parallelism, unless the vertex's max parallelism was not set explicitly
// (then the state's wins, see assignStates). State of an operator the job
// lacks fails the restore unless allowNonRestoredState is set; an
// operator without state is skipped either way. The result keeps only the
// states that map.
func (j *job) loadAndValidate(s *snapshot, allowNonRestored bool) ([]operatorState, error) {
	var out []operatorState
	for _, op := range s.operators {
		v := j.vertex(op.id)
		switch {
		case v != nil && (v.maxParallelism == op.maxParallelism || v.canRescaleMax(op.maxParallelism)):
			out = append(out, op)
		case v != nil:
			return nil, fmt.Errorf("java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint Checkpoint Metadata. Max parallelism mismatch between checkpoint/savepoint state and new program. Cannot map operator %s with max parallelism %d to new program with max parallelism %d. This indicates that the program has been changed in a non-compatible way after the checkpoint/savepoint.", op.id, op.maxParallelism, v.maxParallelism)
		case allowNonRestored || !op.state:
			// "Skipping savepoint state for operator", or its empty state.
		default:
			// Checkpoints#throwNonRestoredStateException.
			return nil, fmt.Errorf("java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint %s. Cannot map checkpoint/savepoint state for operator %s to the new program, because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.", s.pointer, op.id)
		}
	}
	return out, nil
}

// assignStates is StateAssignmentOperation#assignStates for the vertices
// whose operators restore state (a task without any is skipped):
// #checkParallelismPreconditions fails a vertex whose parallelism is above
// the state's max parallelism, and gives a vertex whose max parallelism
// can be rescaled the state's (ExecutionJobVertex#setMaxParallelism), so
// the restored job reports, checkpoints and bounds its rescaling with the
// snapshot's max parallelism rather than the one it computed.
func (j *job) assignStates(s *snapshot) error {
	for _, op := range s.operators {
		v := j.vertex(op.id)
		if v == nil || !op.state {
			continue
		}
		if op.maxParallelism < v.parallelism {
			return fmt.Errorf("java.lang.IllegalStateException: The state for task %s can not be restored. The maximum parallelism (%d) of the restored state is lower than the configured parallelism (%d). Please reduce the parallelism of the task to be lower or equal to the maximum parallelism.", v.id, op.maxParallelism, v.parallelism)
		}
		if op.maxParallelism == v.maxParallelism {
			continue
		}
		if !v.canRescaleMax(op.maxParallelism) {
			return fmt.Errorf("java.lang.IllegalStateException: The maximum parallelism (%d) with which the latest checkpoint of the execution job vertex %s has been taken and the current maximum parallelism (%d) changed. This is currently not supported.", op.maxParallelism, v.name, v.maxParallelism)
		}
		v.maxParallelism = op.maxParallelism
	}
	return nil
}
