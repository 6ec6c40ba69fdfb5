// Package health runs the three-level health checks of FlinkClusters on
// their own interval, apart from reconciles, and derives from them a Verdict
// per cluster that the reconciler turns into status conditions.
//
// The levels, each judged only when the one below it passes:
//
//   - JobManager (ConditionJobManagerReady): the cached JobManager
//     Deployment <name>-jobmanager has a ready pod: status.readyReplicas
//     >= 1, or a ready pod the cache already shows (internal/readiness).
//   - Rest (ConditionRestAvailable): GET /overview answers.
//   - Jobs (ConditionJobsRunning): with spec.job, the job in status.job.id
//     (any job while that is empty) is RUNNING; a session cluster needs at
//     least one RUNNING job only with spec.health.requireRunningJobs, and the
//     level is otherwise True with reason NotRequired. GET /jobs/overview is
//     only requested when the level needs it.
//
// What changes status, and when (Evaluate is the whole rule, and pure):
//
//   - A passing probe sets its level True at once and resets the level's
//     consecutive-failure count; when no level is False any more, Degraded
//     clears. Recovery is never delayed.
//   - A failing probe counts one more consecutive failure of its level. It
//     records a Warning Event and the failure metric every time, but below
//     the threshold (spec.health.failureThreshold, default 3) it leaves the
//     level's condition exactly as it was: one 503 changes nothing in status.
//     At the threshold the level turns False and the cluster Degraded, with
//     the level's reason; the lowest False level names the reason.
//   - A level that cannot be judged (a lower level failed, the JobManager
//     never was ready yet, the job was never submitted, an upgrade is in
//     flight) is "unknown": it counts neither as a failure nor as a success,
//     emits no Event, and resets its own count, since consecutive means
//     uninterrupted by a round in which the level could not be probed. Its
//     condition turns Unknown, except while a lower level's failure is still
//     below the threshold: then it keeps its previous condition too, so a
//     single 503 does not flip JobsRunning from True to Unknown either.
//   - A level with no previous condition that fails below the threshold is
//     Unknown with the probe's reason: nothing is known yet.
//
// Evaluate's changed result is true exactly when one of the four conditions
// (status, reason or message) would change; a moving failure counter or new
// job details alone are no change. The Poller then sends the FlinkCluster on
// Notify, which the controller watches through source.Channel; the
// reconciler reads the Verdict from the Tracker. It sends it too when GET
// /overview first counts a job on the cluster (Verdict.RunsJobs), which
// changes no condition of a session cluster but makes its TaskManagers'
// budget due.
//
// Wiring, for the manager (a sketch; the controller package owns it):
//
//	tracker := health.NewTracker()
//	notify := make(chan event.GenericEvent, 256)
//	_ = mgr.Add(&health.Poller{
//		Reader: mgr.GetCache(), Resolver: resolver, HTTPClient: httpClient,
//		Interval: opts.ReconcileInterval, Tracker: tracker,
//		Recorder: mgr.GetEventRecorder("datapilot-health"), Notify: notify,
//		Metrics:  health.NewMetrics(metrics.Registry),
//	})
//	// in SetupWithManager:
//	//	.WatchesRawSource(source.Channel(notify, &handler.EnqueueRequestForObject{}))
//	// in Reconcile:
//	//	if v, ok := tracker.Get(req.NamespacedName); ok {
//	//		// conditions.go turns v.LevelOf(l) of each level, and
//	//		// v.Degraded, into conditions.
//	//	}
//
// Judgement calls, documented here once:
//
//   - A JobManager that was never ready is starting, not failing: level 1 is
//     unknown with reason JobManagerStarting, without Event or count, so a new
//     cluster pulling its image is neither noisy nor Degraded (its rollout is
//     the reconciler's Progressing business). "Was ready" is remembered by the
//     Tracker and, across operator restarts, read from the FlinkCluster's
//     status (a JobManagerReady condition that is True or False, or
//     status.jobManager.readyReplicas > 0).
//   - A REST API that has not answered since its JobManager turned ready
//     is starting (level 2 unknown, reason RestStarting) for RestStartGrace;
//     once a probe has seen it answer or fail, not answering is a failure.
//     That is decided as the probe's answers are folded in, not as it
//     began: a reconcile's probe and the round's can overlap (one that
//     began before the other saw the API answer counts its own failure),
//     and a probe answered after the grace is past it.
//   - While status.upgrade is set, the upgrade gate owns the outcome (it
//     verifies the jobs and rolls back by itself): failures are reported as
//     unknown, without Event, count or Degraded.
//   - spec.job.state suspended needs no RUNNING job (reason JobSuspended).
//   - A failed GET /jobs/overview is a failure of level 2 (the REST API did
//     not answer), not of level 3, which is then unknown.
//   - Probes do not retry inside a round: the consecutive-failure count is
//     the retry policy, so the REST client runs with MaxRetries 0 and a
//     per-request timeout (ProbeTimeout).
//   - Each failed probe is one Eventf call, and there is no other Event. The
//     events.k8s.io/v1 broadcaster behind the manager's recorder folds
//     repeats (same reason, same cluster) into one Event's series, so three
//     503s in a row are one Event object with series.count 2 at once, and
//     the final count written when the series ends (client-go's behaviour).
//   - Condition messages carry no volatile numbers (counters, slot counts),
//     so a steady cluster causes no status write.
package health
