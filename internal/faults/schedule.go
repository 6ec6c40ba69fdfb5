// Package faults generates seeded fault schedules for a FlinkCluster with a
// job (spec changes, Flink REST outages, JobManager loss, slow and failing
// savepoints, operator restarts, the cluster deleted and created again,
// answers to the requests that change a job lost after Flink did them) and
// judges, from what the Flink REST simulator recorded, whether the job's
// state survived them. The runner is test/faults; the same seed always
// gives the same schedule, so a failure replays with -faults.seed=N.
package faults

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// Kind is what a step does.
type Kind string

const (
	// Spec changes.
	Version     Kind = "version"     // spec.version to another release
	Config      Kind = "config"      // one spec.flinkConfiguration key
	Parallelism Kind = "parallelism" // spec.job.parallelism
	RemoveJob   Kind = "remove-job"  // spec.job removed
	AddJob      Kind = "add-job"     // spec.job declared again
	// Faults.
	RESTOutage        Kind = "rest-outage"        // every REST request answers 503 for a while
	LoseJobManager    Kind = "lose-jobmanager"    // the leading JobManager process crashes; its container restarts in its pod
	SlowSavepoints    Kind = "slow-savepoints"    // savepoints stall for a while
	FailingSavepoints Kind = "failing-savepoints" // savepoints fail for a while
	RestartOperator   Kind = "restart-operator"   // SIGKILL, then a new operator process
	Recreate          Kind = "recreate-cluster"   // the FlinkCluster deleted, then created again
	LostAnswers       Kind = "lost-answers"       // the next answer to each request that changes a job is lost
)

// JobRequests are the REST requests that change a job, by the endpoint the
// simulator counts them under: a LostAnswers step loses the next answer to
// each, after Flink did what it asked.
var JobRequests = []string{
	"POST /jars/{jarid}/run",
	"POST /jobs/{jobid}/stop",
	"POST /jobs/{jobid}/savepoints",
	"POST /jobs/{jobid}/checkpoints",
	"PATCH /jobs/{jobid}",
	"PUT /jobs/{jobid}/resource-requirements",
}

// Step is one timed step of a schedule.
type Step struct {
	// After is the wait since the previous step (or since the job ran).
	After time.Duration
	Kind  Kind
	// Version for Version; Key and Value for Config; Parallelism for
	// Parallelism.
	Version     string
	Key, Value  string
	Parallelism int32
	// For is how long a REST outage or a savepoint fault lasts.
	For time.Duration
}

func (s Step) String() string {
	var arg string
	switch s.Kind {
	case Version:
		arg = " " + s.Version
	case Config:
		arg = fmt.Sprintf(" %s=%s", s.Key, s.Value)
	case Parallelism:
		arg = fmt.Sprintf(" %d", s.Parallelism)
	case RESTOutage, SlowSavepoints, FailingSavepoints:
		arg = " for " + s.For.String()
	}
	return fmt.Sprintf("+%s %s%s", s.After, s.Kind, arg)
}

// Schedule is a cluster to start and the steps to run against it.
type Schedule struct {
	Seed int64
	// Releases are the versions Version steps choose from, oldest first;
	// the cluster starts on the first.
	Releases    []string
	UpgradeMode string
	// HighAvailability is Kubernetes HA; without it a lost JobManager
	// forgets its jobs.
	HighAvailability bool
	// SlowCleanup is how long the global cleanup of a job that ended
	// takes with high availability, all schedule long (slow HA storage):
	// a JobManager lost meanwhile leaves the next leader to finish it,
	// showing the job only by its result. Zero: at once.
	SlowCleanup time.Duration
	// Adaptive runs the job with the AdaptiveScheduler, which shows no
	// checkpoint history while it waits for slots or builds its graph
	// (at every start, restart and rescale) and ends a job cancelled
	// there with that empty history.
	Adaptive    bool
	Parallelism int32
	Steps       []Step
}

func (s Schedule) String() string {
	var b strings.Builder
	ha := "none"
	if s.HighAvailability {
		ha = "kubernetes"
	}
	if s.SlowCleanup > 0 {
		ha += fmt.Sprintf(" (cleanup takes %s)", s.SlowCleanup)
	}
	scheduler := "default"
	if s.Adaptive {
		scheduler = "adaptive"
	}
	fmt.Fprintf(&b, "seed %d: Flink %s, upgradeMode %s, high availability %s, %s scheduler, parallelism %d", s.Seed, s.Releases[0], s.UpgradeMode, ha, scheduler, s.Parallelism)
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, st)
	}
	return b.String()
}

// lines are release lines of two minors of two releases each, as the end-to-end upgrade
// paths cover the three shapes of Flink configuration (flink-conf.yaml,
// config.yaml with renamed keys, 2.x).
var lines = [][]string{
	{"1.17.1", "1.17.2", "1.18.0", "1.18.1"},
	{"1.19.1", "1.19.3", "1.20.0", "1.20.1"},
	{"2.0.0", "2.0.1", "2.1.0", "2.1.1"},
}

// configKeys are settings a user may change that move nothing Flink
// decides restores by: a pure configuration roll.
var configKeys = map[string][]string{
	"pipeline.object-reuse":   {"true", "false"},
	"rest.flamegraph.enabled": {"true", "false"},
}

// Slots is what the generated cluster offers: 2 TaskManagers of 2 slots.
const Slots = 4

// Generate builds the schedule of a seed: a few steps, each a spec change
// or a fault, with a few seconds between them. A removed job is declared
// again before the schedule ends, so the job is expected to run at the end.
func Generate(seed int64) Schedule {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	line := lines[r.IntN(len(lines))]
	s := Schedule{
		Seed: seed, Releases: line,
		UpgradeMode:      []string{"savepoint", "last-state"}[r.IntN(2)],
		HighAvailability: r.IntN(2) == 0,
		Parallelism:      int32(1 + r.IntN(Slots)),
	}
	version, parallelism, hasJob := line[0], s.Parallelism, true
	kinds := []Kind{Version, Version, Config, Parallelism, RemoveJob, RESTOutage, LoseJobManager, SlowSavepoints, FailingSavepoints, RestartOperator, Recreate, LostAnswers}
	n := 3 + r.IntN(3)
	for range n {
		st := Step{After: time.Duration(r.IntN(9)) * 500 * time.Millisecond, Kind: kinds[r.IntN(len(kinds))]}
		switch st.Kind {
		case Version:
			st.Version = otherRelease(r, line, version)
			version = st.Version
		case Config:
			keys := []string{"pipeline.object-reuse", "rest.flamegraph.enabled"}
			st.Key = keys[r.IntN(len(keys))]
			st.Value = configKeys[st.Key][r.IntN(2)]
		case Parallelism:
			st.Parallelism = int32(1 + r.IntN(Slots))
			if st.Parallelism == parallelism {
				st.Parallelism = parallelism%Slots + 1
			}
			parallelism = st.Parallelism
		case RemoveJob:
			if !hasJob {
				st.Kind = AddJob
			}
			hasJob = !hasJob
		case RESTOutage:
			st.For = time.Duration(2+r.IntN(7)) * time.Second
		case SlowSavepoints, FailingSavepoints:
			// Up to past the upgrade policy's savepointTimeout (10 s).
			st.For = time.Duration(2+r.IntN(14)) * time.Second
		}
		s.Steps = append(s.Steps, st)
	}
	if !hasJob {
		s.Steps = append(s.Steps, Step{After: time.Duration(r.IntN(9)) * 500 * time.Millisecond, Kind: AddJob})
	}
	// A generator of its own, so that every seed keeps the steps it had
	// before slow cleanups were drawn.
	if c := rand.New(rand.NewPCG(uint64(seed), 0xc1ea)); s.HighAvailability && c.IntN(2) == 0 {
		s.SlowCleanup = time.Duration(5+c.IntN(16)) * time.Second
	}
	// And one for the scheduler, drawn for a third of the seeds.
	s.Adaptive = rand.New(rand.NewPCG(uint64(seed), 0xada9)).IntN(3) == 0
	return s
}

// otherRelease picks a release of the line other than the current one,
// of the same or a later minor: Flink restores a savepoint in the same or
// a later minor, not an older one. Every minor of a line has two releases,
// so there is always one.
func otherRelease(r *rand.Rand, line []string, current string) string {
	cur, _ := flink.ParseVersion(current)
	var choices []string
	for _, v := range line {
		pv, _ := flink.ParseVersion(v)
		if v != current && (pv.Major > cur.Major || pv.Major == cur.Major && pv.Minor >= cur.Minor) {
			choices = append(choices, v)
		}
	}
	return choices[r.IntN(len(choices))]
}
