package health

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/workload"
)

// Probe reasons.
const (
	ReasonJobManagerReady    = "JobManagerReady"
	ReasonJobManagerNotReady = "JobManagerNotReady"
	ReasonJobManagerMissing  = "JobManagerMissing"
	ReasonJobManagerStarting = "JobManagerStarting"
	ReasonJobManagerUnknown  = "JobManagerUnknown"

	ReasonRestAvailable   = "RestAvailable"
	ReasonRestStarting    = "RestStarting"
	ReasonRestUnavailable = "RestUnavailable"
	ReasonRestError       = "RestError"

	ReasonJobRunning      = "JobRunning"
	ReasonJobsRunning     = "JobsRunning"
	ReasonJobNotRunning   = "JobNotRunning"
	ReasonJobNotFound     = "JobNotFound"
	ReasonNoJobsRunning   = "NoJobsRunning"
	ReasonJobNotSubmitted = "JobNotSubmitted"
	ReasonJobStarting     = "JobStarting"
	ReasonJobSuspended    = "JobSuspended"
	ReasonNotRequired     = "NotRequired"
)

// RestStartGrace is how long after a JobManager first turned ready a REST
// API that cannot be reached counts as starting (ReasonRestStarting): no
// failure, no Warning. kube-proxy routes a Service to a pod only after the
// EndpointSlice controller published it ready, which trails the pod under
// load; a REST API still unreachable after this is a failure.
const RestStartGrace = 10 * time.Second

// maxMessage bounds probe messages; they become Event notes (1 kB) and
// condition messages.
const maxMessage = 512

// jobManagerProbe judges level 1 from the cached JobManager workload and
// its ready pods (readiness.JobManagers).
// seenReady says whether the JobManager has ever been ready: until then it
// is starting, which is no failure.
func jobManagerProbe(jm workload.JobManager, ready int32, seenReady bool) Probe {
	p := Probe{Level: LevelJobManager}
	switch {
	case jm.Exists() && ready >= 1:
		p.OK, p.Reason, p.Message = true, ReasonJobManagerReady, "A JobManager pod is ready."
	case !seenReady:
		p.Unknown, p.Reason = true, ReasonJobManagerStarting
		p.Message = "The JobManager has not been ready yet; the cluster is starting."
	case !jm.Exists():
		p.Reason, p.Message = ReasonJobManagerMissing, "The JobManager StatefulSet does not exist."
	default:
		p.Reason = ReasonJobManagerNotReady
		p.Message = fmt.Sprintf("No JobManager pod is ready (%d of %d ready).", ready, desiredReplicas(jm))
	}
	return p
}

func desiredReplicas(jm workload.JobManager) int32 {
	if r := jm.Replicas(); r != nil {
		return *r
	}
	return 1
}

// everReady reads, from the FlinkCluster's status, whether its JobManager
// has been ready before, so an operator restart does not take a broken
// JobManager for a starting one.
func everReady(fc *v1.FlinkCluster) bool {
	if fc.Status.JobManager.ReadyReplicas > 0 {
		return true
	}
	for _, c := range fc.Status.Conditions {
		if c.Type == v1.ConditionJobManagerReady && (c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse) {
			return true
		}
	}
	return false
}

// restProbe judges level 2 from a REST error (nil: it answered). starting:
// the JobManager turned ready moments ago (RestStartGrace), when a REST API
// that is not reachable yet is starting, not failing.
func restProbe(err error, starting bool) Probe {
	p := Probe{Level: LevelRest}
	switch {
	case err == nil:
		p.OK, p.Reason, p.Message = true, ReasonRestAvailable, "The Flink REST API answers."
	case starting && flink.IsUnavailable(err) && !noSuchHost(err):
		p.Unknown, p.Reason = true, ReasonRestStarting
		p.Message = sentence("The JobManager turned ready moments ago; its REST API does not answer yet: " + err.Error())
	case flink.IsUnavailable(err):
		p.Reason, p.Message = ReasonRestUnavailable, sentence(err.Error())
	default:
		p.Reason, p.Message = ReasonRestError, sentence(err.Error())
	}
	return p
}

// noSuchHost: the REST API's host name does not resolve. A Service's name
// resolves from its creation on, well before its pods are ready, so this
// is no start but a missing Service (or DNS).
func noSuchHost(err error) bool {
	var d *net.DNSError
	return errors.As(err, &d) && d.IsNotFound
}

// unknownAbove is the probe of a level that was not judged because a level
// below it did not pass.
func unknownAbove(l Level, below Probe) Probe {
	reason := below.Reason
	msg := "The level was not probed: " + lowerFirst(below.Message)
	return Probe{Level: l, Unknown: true, Reason: reason, Message: msg}
}

// jobsRequired says whether level 3 needs GET /jobs/overview; when it does
// not, p is the level's probe.
func jobsRequired(fc *v1.FlinkCluster) (p Probe, required bool) {
	p = Probe{Level: LevelJobs, OK: true}
	switch {
	case fc.Spec.Job != nil && fc.Spec.Job.State == v1.JobStateSuspended:
		p.Reason, p.Message = ReasonJobSuspended, "The job is suspended by spec.job.state; no job needs to run."
		return p, false
	case fc.Spec.Job != nil:
		return p, true
	case fc.Spec.Health != nil && fc.Spec.Health.RequireRunningJobs:
		return p, true
	default:
		p.Reason, p.Message = ReasonNotRequired, "This session cluster does not require running jobs."
		return p, false
	}
}

// startGrace is how long a submitted job may take to appear and leave
// INITIALIZING and CREATED before that counts as a failure.
const startGrace = time.Minute

// jobsProbe judges level 3 from GET /jobs/overview, for a cluster whose
// level 3 is required.
func jobsProbe(fc *v1.FlinkCluster, jobs []JobSummary, now time.Time) Probe {
	p := Probe{Level: LevelJobs}
	var running *JobSummary
	for i := range jobs {
		if jobs[i].State == flink.JobRunning {
			running = &jobs[i]
			break
		}
	}
	if fc.Spec.Job == nil {
		if running != nil {
			p.OK, p.Reason, p.Message = true, ReasonJobsRunning, "At least one job is RUNNING."
		} else {
			p.Reason, p.Message = ReasonNoJobsRunning, "No job is RUNNING, and spec.health.requireRunningJobs requires one."
		}
		return p
	}
	var id string
	var submitted bool
	if js := fc.Status.Job; js != nil {
		id, submitted = js.ID, js.ID != "" || js.SubmittedAt != nil
	}
	if id == "" {
		switch {
		case running != nil:
			p.OK, p.Reason, p.Message = true, ReasonJobRunning, fmt.Sprintf("Job %s is RUNNING.", jobName(*running))
		case !submitted:
			p.Unknown, p.Reason, p.Message = true, ReasonJobNotSubmitted, "The job has not been submitted yet."
		default:
			p.Reason, p.Message = ReasonJobNotRunning, "No job is RUNNING."
		}
		return p
	}
	// A job just submitted is on its way, no failure: the operator records
	// its ID before sending it, and Flink runs it after INITIALIZING and
	// CREATED.
	js := fc.Status.Job
	fresh := js.SubmittedAt != nil && now.Sub(js.SubmittedAt.Time) < startGrace &&
		(js.State == "" || js.State == string(flink.JobInitializing) || js.State == string(flink.JobCreated))
	for _, j := range jobs {
		if j.ID != id {
			continue
		}
		switch {
		case j.State == flink.JobRunning:
			p.OK, p.Reason, p.Message = true, ReasonJobRunning, fmt.Sprintf("Job %s is RUNNING.", jobName(j))
		case fresh && (j.State == flink.JobInitializing || j.State == flink.JobCreated):
			p.Unknown, p.Reason, p.Message = true, ReasonJobStarting, JobStartingMessage(id)
		default:
			p.Reason, p.Message = ReasonJobNotRunning, fmt.Sprintf("Job %s is %s, not RUNNING.", jobName(j), j.State)
		}
		return p
	}
	if fresh {
		// One message for every step of the start: each change would be
		// a status write.
		p.Unknown, p.Reason, p.Message = true, ReasonJobStarting, JobStartingMessage(id)
		return p
	}
	p.Reason, p.Message = ReasonJobNotFound, fmt.Sprintf("Job %s from status.job.id is unknown to the JobManager.", id)
	return p
}

// JobStartingMessage is what the Jobs level says of a job on its way to
// RUNNING: one message for every step of the start.
func JobStartingMessage(id string) string { return fmt.Sprintf("Job %s is starting.", id) }

func jobName(j JobSummary) string {
	if j.Name == "" || j.Name == j.ID {
		return j.ID
	}
	return fmt.Sprintf("%s (%s)", j.Name, j.ID)
}

func summarize(jobs []flink.JobDetails) []JobSummary {
	out := make([]JobSummary, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, JobSummary{ID: j.JID, Name: j.Name, State: j.State})
	}
	return out
}

// duringUpgrade turns a failure into an unknown probe: while an upgrade is
// in flight its gate judges the cluster.
func duringUpgrade(p Probe) Probe {
	if !p.Failed() {
		return p
	}
	p.Unknown = true
	p.Message = strings.TrimSuffix(p.Message, ".") + ". Not counted while an upgrade is in progress."
	return p
}

// sentence makes s a bounded sentence: capital first letter, final period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = strings.TrimSpace(s[:n]) + "…"
	}
	if s == "" {
		return "No details."
	}
	r, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[size:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	// Keep acronyms and names (JobManager, Flink) as they are.
	if len(s) > 1 && s[1] >= 'A' && s[1] <= 'Z' {
		return s
	}
	if strings.HasPrefix(s, "Flink") || strings.HasPrefix(s, "JobManager") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
