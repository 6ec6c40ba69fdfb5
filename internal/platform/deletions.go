package platform

import (
	"context"
	"sync"
	"time"

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
	client metadata.Interface
	queue  workqueue.TypedRateLimitingInterface[podIncarnation]
}

// finisherWorkers bounds the deletes in flight, as kwok's stage parallelism
// did: a benchmark's teardown ends thousands of pods.
const finisherWorkers = 8

// finishDeletions runs the finisher until ctx ends, with the given identity
// (kwok's: the kubelets it stands in for).
func finishDeletions(ctx context.Context, config *rest.Config) error {
	f, err := newDeletionFinisher(config)
	if err != nil {
		return err
	}
	factory := metadatainformer.NewSharedInformerFactory(f.client, 0)
	informer := factory.ForResource(podsResource).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.observe,
		UpdateFunc: func(_, obj any) { f.observe(obj) },
	}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range finisherWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f.next(ctx) {
			}
		}()
	}
	informer.Run(ctx.Done())
	f.queue.ShutDown()
	wg.Wait()
	return nil
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func newDeletionFinisher(config *rest.Config) (*deletionFinisher, error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = 500, 1000
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &deletionFinisher{client: client, queue: workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[podIncarnation](50*time.Millisecond, 5*time.Second))}, nil
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
	grace := int64(0)
	err := f.client.Resource(podsResource).Namespace(p.namespace).
		Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.uid}})
	// Gone already, or the name is another pod's now (the precondition's
	// 409): this incarnation's deletion is over.
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
		f.queue.Forget(p)
		return true
	}
	f.queue.AddRateLimited(p)
	return true
}
