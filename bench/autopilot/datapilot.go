package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/autopilot"
)

// datapilot is the operator's policy with the API's defaults (a 10 min
// window, 5 min of stabilization, a 1 h scale-down delay, 15 min of
// catch-up, a 1 h climb horizon, 70% ± 20%, at most 3 rescales an hour),
// called as the controller calls it: Evaluate, Decide, and Settle once
// the job runs at the new parallelism.
type datapilot struct {
	p       autopilot.Policy
	st      v1.AutoscalerStatus
	pending bool
}

func newDatapilot() *datapilot {
	p, _ := autopilot.PolicyFor(&v1.FlinkClusterSpec{TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: slots}, Job: &v1.JobSpec{},
		Autoscaler: &v1.AutoscalerSpec{MaxParallelism: maxParallelism, MaxTaskManagers: maxTMs, UtilizationBoundaryPercent: boundary, ClimbHorizon: climbHorizon}})
	return &datapilot{p: p}
}

func (d *datapilot) name() string { return "Datapilot" }
func (d *datapilot) every() int   { return sampleEvery }

func (d *datapilot) policy() autopilot.Policy {
	p := d.p
	p.RestartTime = autopilot.RestartEstimate(d.st.Decisions, p.DefaultRestartTime())
	return p
}

func (d *datapilot) decide(j *jobState) []int {
	if d.pending {
		return nil
	}
	p := d.policy()
	now := j.at(j.now)
	rec := autopilot.Evaluate(j.history, p, p.MetricsFrom(j.at(j.runningAt)), now)
	out := autopilot.Decide(autopilot.Input{Policy: p, Now: now, Rec: rec, Status: d.st})
	d.st = out.Status
	if out.Apply == 0 {
		return nil
	}
	if trace != "" && strings.Contains(d.name(), trace) {
		fmt.Fprintf(os.Stderr, "  %s\n", d.st.Decisions[0].Message)
	}
	next := make([]int, len(j.par))
	for i := range next {
		next[i] = int(out.Apply)
		for _, v := range d.st.Vertices {
			if v.ID == vertexID(i) {
				next[i] = int(v.Parallelism)
			}
		}
	}
	d.pending = true
	return next
}

func (d *datapilot) restarted(j *jobState) {
	run := autopilot.Running{Vertices: map[string]int32{}, Since: j.at(j.now + 1)}
	for i, p := range j.par {
		run.Parallelism = max(run.Parallelism, int32(p))
		run.Vertices[vertexID(i)] = int32(p)
	}
	autopilot.Settle(&d.st, d.policy(), j.at(j.now+1).Add(time.Second), run, false, false, "", 0)
	d.pending = false
}
