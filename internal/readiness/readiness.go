// Package readiness counts a cluster's ready JobManagers and TaskManagers.
//
// The workloads' status says how many pods are ready once
// kube-controller-manager has seen them turn ready and written it: for a
// Deployment two hops later (the ReplicaSet's status, then the
// Deployment's), for a StatefulSet one. Under load that trails the pods by
// seconds (1.7 s at the median with 1000 clusters starting, measured by
// `make bench`), and a cluster would say Available that much later. The
// pods say it first. A pod counts only when it provably runs the
// workload's current pod template, so a pod of an older revision that the
// cache still shows Ready never makes a rollout look done; where that
// cannot be proven the workload's status alone counts, as before.
package readiness

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

// Counts are a workload's pods: those that exist (not being deleted), those
// of them that run its current template, and those that are ready.
// Observed: the workload's controller has acted on its current spec (its
// status says so, or a pod of its current template exists, which only the
// controller creates).
// ReadySince: the earliest time one of the counted ready pods turned
// ready, as the pods record it (zero when counted from status alone).
type Counts struct {
	Replicas, Updated, Ready int32
	Observed                 bool
	ReadySince               time.Time
}

// JobManagers counts the JobManager pods: the workload's status, or more
// where the pods already show more. A StatefulSet's are counted as the
// TaskManagers' are (its update revision names the current pods); an older
// cluster's Deployment's as deploymentPods says.
func JobManagers(jm workload.JobManager, pods []Pod) Counts {
	if jm.Terminating() {
		return Counts{}
	}
	if jm.StatefulSet != nil {
		return statefulSetPods(jm.StatefulSet, pods, resources.ComponentJobManager)
	}
	return deploymentPods(jm.Deployment, pods)
}

// deploymentPods counts a JobManager Deployment's pods. They count only
// while the Deployment has had one pod template, its first (generation 1:
// any change of its spec raises it, the template's among them), and only
// those created no earlier than the Deployment (not the pods of an earlier
// Deployment of the same name that the garbage collector has yet to
// delete). A Deployment does not publish which ReplicaSet is current, so
// after its first change its status alone counts.
func deploymentPods(d *appsv1.Deployment, pods []Pod) Counts {
	if d == nil {
		return Counts{}
	}
	status := Counts{Replicas: d.Status.Replicas, Updated: d.Status.UpdatedReplicas, Ready: d.Status.ReadyReplicas,
		Observed: d.Status.ObservedGeneration >= d.Generation}
	if d.Generation != 1 {
		return status
	}
	// A pod of the first template is one the Deployment controller made
	// (through its ReplicaSet) after it observed generation 1: its status,
	// two hops behind, need not say so first.
	current := count(pods, resources.ComponentJobManager, func(p *Pod) bool {
		return !p.CreationTimestamp.Before(&d.CreationTimestamp)
	})
	current.Observed = current.Replicas > 0
	return status.max(current)
}

// TaskManagers counts the TaskManager pods (statefulSetPods).
func TaskManagers(s *appsv1.StatefulSet, pods []Pod) Counts {
	return statefulSetPods(s, pods, resources.ComponentTaskManager)
}

// statefulSetPods counts a StatefulSet's pods of the component: its status,
// or more where the pods of its update revision already show more. The
// StatefulSet controller labels each pod with the revision it was created
// from (controller-revision-hash), and status.updateRevision names the
// current template's.
func statefulSetPods(s *appsv1.StatefulSet, pods []Pod, component string) Counts {
	if s == nil {
		return Counts{}
	}
	// A pod's revision names the template, not the replica count (a scale
	// raises the generation too): observed is the status's word alone.
	status := Counts{Replicas: s.Status.Replicas, Updated: s.Status.UpdatedReplicas, Ready: s.Status.ReadyReplicas,
		Observed: s.Status.ObservedGeneration >= s.Generation}
	rev := s.Status.UpdateRevision
	if rev == "" {
		return status
	}
	// A pod older than the StatefulSet is an earlier one's of the same
	// name (and template, so of the same revision name) that the garbage
	// collector has yet to delete.
	return status.max(count(pods, component, func(p *Pod) bool {
		return p.Revision == rev && !p.CreationTimestamp.Before(&s.CreationTimestamp)
	}))
}

// DefaultProgressDeadline is how long a JobManager pod of the current
// template may stay unready before its rollout counts as stuck: a
// Deployment's default progressDeadlineSeconds, which older clusters'
// JobManager Deployments run with.
const DefaultProgressDeadline = 10 * time.Minute

// JobManagerStuck says why the JobManager's rollout counts as stuck, empty
// when it does not; wait is how soon it would, while a pod of the current
// template is unready (zero when none is).
//
// A Deployment says it itself: its Progressing condition's
// ProgressDeadlineExceeded; or it has been being deleted (replaced by a
// StatefulSet) for the deadline, which that condition never says. A
// StatefulSet has no progress deadline, so the operator keeps one of its
// own, from the pods: one not being deleted, unready since deadline ago
// (its Ready condition's last transition; its creation while it has
// none), as a pod that never starts, is never scheduled or never passes
// its readiness probe is. Of any revision: some Kubernetes versions'
// StatefulSet controller leaves an unready pod of an older revision in
// place, a rollback's included (kubernetes#137409, 1.35 with the
// MaxUnavailableStatefulSet gate on), and that must be said too. Unlike
// the Deployment's, this also counts a JobManager that ran and has been
// down that long: it is degraded as well.
func JobManagerStuck(jm workload.JobManager, pods []Pod, now time.Time, deadline time.Duration) (why string, wait time.Duration) {
	if d := jm.Deployment; d != nil {
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
				return "The JobManager rollout exceeded its progress deadline: " + c.Message, 0
			}
		}
		if d.DeletionTimestamp != nil {
			if left := d.DeletionTimestamp.Add(deadline).Sub(now); left > 0 {
				return "", left
			}
			return fmt.Sprintf("The JobManager Deployment %s has been being deleted for %s, its pods not gone; the StatefulSet that replaces it waits for them.", d.Name, deadline), 0
		}
		return "", 0
	}
	s := jm.StatefulSet
	if s == nil || s.DeletionTimestamp != nil {
		return "", 0
	}
	for i := range pods {
		p := &pods[i]
		if p.Component != resources.ComponentJobManager || p.DeletionTimestamp != nil || p.Ready {
			continue
		}
		since := p.UnreadySince.Time
		if since.IsZero() {
			since = p.CreationTimestamp.Time
		}
		left := since.Add(deadline).Sub(now)
		if left <= 0 {
			return fmt.Sprintf("The JobManager pod %s has not been ready for %s (since %s).", p.Name, deadline, since.UTC().Format(time.RFC3339)), 0
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	return "", wait
}

func (c Counts) max(o Counts) Counts {
	return Counts{Replicas: max(c.Replicas, o.Replicas), Updated: max(c.Updated, o.Updated), Ready: max(c.Ready, o.Ready),
		Observed: c.Observed || o.Observed, ReadySince: earliest(c.ReadySince, o.ReadySince)}
}

// count counts the component's current pods that are not being deleted
// (all of them updated, by being current), and those of them that are
// Ready.
func count(pods []Pod, component string, current func(*Pod) bool) Counts {
	var c Counts
	for i := range pods {
		p := &pods[i]
		if p.Component != component || p.DeletionTimestamp != nil || !current(p) {
			continue
		}
		c.Replicas++
		c.Updated++
		if p.Ready {
			c.Ready++
			c.ReadySince = earliest(c.ReadySince, p.ReadySince.Time)
		}
	}
	return c
}

// Any: a pod of the component exists, being deleted or not.
func Any(pods []Pod, component string) bool {
	for i := range pods {
		if pods[i].Component == component {
			return true
		}
	}
	return false
}

// YoungestReady is when the most recently ready of the component's pods
// (not being deleted) turned Ready; zero when none is ready. A process
// that answers through the component's Service is at least this old: a
// restarted container turns its pod unready until it is ready again.
func YoungestReady(pods []Pod, component string) time.Time {
	var t time.Time
	for i := range pods {
		if p := &pods[i]; p.Component == component && p.DeletionTimestamp == nil && p.Ready && p.ReadySince.After(t) {
			t = p.ReadySince.Time
		}
	}
	return t
}

// earliest of two times, a zero one being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// PodReady: the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
