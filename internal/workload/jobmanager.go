// Package workload holds a cluster's JobManager workload as observed,
// whichever kind holds it: a StatefulSet, or the Deployment of a cluster
// created before the JobManager became a StatefulSet (2026-12-07,
// docs/performance-shape.md). Every reader of the JobManager (readiness,
// rollout, health, the queue's priority, deletion) reads it through this
// one view, so the two kinds differ in one place.
package workload

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// JobManager is the cluster's JobManager workload: at most one of the two
// is set; neither when it does not exist.
type JobManager struct {
	StatefulSet *appsv1.StatefulSet
	// Deployment is an older cluster's JobManager. While one exists it is
	// the JobManager, being deleted or not: the StatefulSet is created
	// only once it is gone, as a Deployment's Recreate would replace it.
	Deployment *appsv1.Deployment
}

// Read reads the cluster's JobManager from r: its Deployment when one
// exists, else its StatefulSet.
func Read(ctx context.Context, r client.Reader, fc *v1.FlinkCluster) (JobManager, error) {
	key := types.NamespacedName{Namespace: fc.Namespace, Name: resources.JobManagerName(fc)}
	dep := &appsv1.Deployment{}
	switch err := r.Get(ctx, key, dep); {
	case err == nil:
		return JobManager{Deployment: dep}, nil
	case !apierrors.IsNotFound(err):
		return JobManager{}, err
	}
	sts := &appsv1.StatefulSet{}
	switch err := r.Get(ctx, key, sts); {
	case err == nil:
		return JobManager{StatefulSet: sts}, nil
	case !apierrors.IsNotFound(err):
		return JobManager{}, err
	}
	return JobManager{}, nil
}

// Of is the JobManager view of a workload object, false for any other
// object (a TaskManager StatefulSet among them).
func Of(obj client.Object) (JobManager, bool) {
	if obj.GetLabels()[resources.LabelComponent] != resources.ComponentJobManager {
		return JobManager{}, false
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return JobManager{Deployment: o}, true
	case *appsv1.StatefulSet:
		return JobManager{StatefulSet: o}, true
	}
	return JobManager{}, false
}

// Object is the workload, nil when there is none.
func (j JobManager) Object() client.Object {
	switch {
	case j.Deployment != nil:
		return j.Deployment
	case j.StatefulSet != nil:
		return j.StatefulSet
	}
	return nil
}

// Exists: a JobManager workload was read.
func (j JobManager) Exists() bool { return j.Object() != nil }

// Terminating: it is being deleted.
func (j JobManager) Terminating() bool {
	o := j.Object()
	return o != nil && o.GetDeletionTimestamp() != nil
}

// Annotations are the workload's annotations (nil when there is none).
func (j JobManager) Annotations() map[string]string {
	if o := j.Object(); o != nil {
		return o.GetAnnotations()
	}
	return nil
}

// Replicas is the replica count its spec asks for; nil when unset or when
// there is no workload.
func (j JobManager) Replicas() *int32 {
	switch {
	case j.Deployment != nil:
		return j.Deployment.Spec.Replicas
	case j.StatefulSet != nil:
		return j.StatefulSet.Spec.Replicas
	}
	return nil
}

// ReadyReplicas is how many ready pods its status counts.
func (j JobManager) ReadyReplicas() int32 {
	switch {
	case j.Deployment != nil:
		return j.Deployment.Status.ReadyReplicas
	case j.StatefulSet != nil:
		return j.StatefulSet.Status.ReadyReplicas
	}
	return 0
}

// RevisionsAgree: the workload's controller reports no rollout between two
// pod templates. A StatefulSet says it by its current and update
// revisions, which agree only once every pod runs the update revision and
// is ready; a Deployment's pods are counted instead (readiness).
func (j JobManager) RevisionsAgree() bool {
	if s := j.StatefulSet; s != nil {
		return s.Status.UpdateRevision == s.Status.CurrentRevision
	}
	return true
}

// Ready is the one definition of "a JobManager is ready" from the
// workload's own status: it exists, is not being deleted, and counts a
// ready pod.
func (j JobManager) Ready() bool {
	return j.Exists() && !j.Terminating() && j.ReadyReplicas() >= 1
}
