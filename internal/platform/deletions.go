package platform

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// podIncarnation is one pod: its name and the UID of this incarnation of it.
type podIncarnation struct {
	namespace, name string
	uid             types.UID
}

// deletionFinisher ends the graceful deletion of a pod as a kubelet does once
// its containers have stopped (here at once: nothing runs in them): it
// deletes the pod with grace period 0, preconditioned on its UID (the
// kubelet's status manager, kubernetes/kubernetes#25224), so the delete
// never reaches a later pod of the same name.
//
// kwok cannot be trusted with it: its PodController.deleteResource
// (sigs.k8s.io/kwok v0.8.0) deletes by name alone, from a stage matched
// asynchronously on an object its watch delivered. Under load a
// StatefulSet pod's delete then reached the successor the StatefulSet
// controller had created under the same name, whose own deletion then
// reached the next one: in one chaos run (make test on 762e572) every pod
// of a namespace was deleted about 100 times in four minutes, and an
// upgrade's JobManager never lived long enough to run its job.
type deletionFinisher struct {
	client   metadata.Interface
	queue    workqueue.TypedRateLimitingInterface[podIncarnation]
	informer cache.SharedIndexInformer
	log      logr.Logger
}

// finisherWorkers bounds the deletes in flight, as kwok's stage parallelism
// did: a benchmark's teardown ends thousands of pods.
const finisherWorkers = 8

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// newDeletionFinisher builds the finisher with the given identity (kwok's:
// the kubelets it stands in for); run starts it.
func newDeletionFinisher(config *rest.Config, log logr.Logger) (*deletionFinisher, error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 500, 1000
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	f := &deletionFinisher{client: client, log: log, queue: workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[podIncarnation](50*time.Millisecond, 5*time.Second))}
	f.informer = metadatainformer.NewSharedInformerFactory(client, 0).ForResource(podsResource).Informer()
	if _, err := f.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.observe,
		UpdateFunc: func(_, obj any) { f.observe(obj) },
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// run finishes deletions until ctx ends. A relist (after the API server
// restarts, or its watch expires) delivers every pod again, so a deletion
// begun while the finisher could not watch is finished once it can.
func (f *deletionFinisher) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range finisherWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f.next(ctx) {
			}
		}()
	}
	f.informer.Run(ctx.Done())
	f.queue.ShutDown()
	wg.Wait()
}

// observe queues a pod whose deletion has begun.
func (f *deletionFinisher) observe(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || m.DeletionTimestamp == nil {
		return
	}
	f.queue.Add(podIncarnation{namespace: m.Namespace, name: m.Name, uid: m.UID})
}

// next deletes one queued pod; false once the queue is shut down.
func (f *deletionFinisher) next(ctx context.Context) bool {
	p, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(p)
	if done, err := f.finish(ctx, p); done || ctx.Err() != nil {
		f.queue.Forget(p)
	} else {
		if n := f.queue.NumRequeues(p); n == 5 || (n > 0 && n%50 == 0) {
			f.log.Error(err, "Pod deletion not finished", "pod", p.namespace+"/"+p.name, "attempts", n+1)
		}
		f.queue.AddRateLimited(p)
	}
	return true
}

// finish deletes incarnation p; done once it is gone.
func (f *deletionFinisher) finish(ctx context.Context, p podIncarnation) (done bool, err error) {
	pods := f.client.Resource(podsResource).Namespace(p.namespace)
	grace := int64(0)
	err = pods.Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.uid}})
	if err == nil || apierrors.IsNotFound(err) {
		return true, nil
	}
	if apierrors.IsConflict(err) {
		// The precondition's 409 when the name is another pod's now; any
		// other conflict leaves this incarnation to try again.
		m, gerr := pods.Get(ctx, p.name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) || (gerr == nil && m.UID != p.uid) {
			return true, nil
		}
	}
	return false, err
}
