package autopilot

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// PodNeeds is what one TaskManager pod asks of a node.
type PodNeeds struct {
	Requests     corev1.ResourceList
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// Fit counts how many more pods with needs the nodes can take now: on
// each Ready, schedulable node that the selector matches and whose
// NoSchedule/NoExecute taints are tolerated, what its allocatable leaves
// after the requests of the pods bound to it. It is the scheduler's
// resource fit (NodeResourcesFit, NodeAffinity's node selector,
// TaintToleration), without the scoring and the affinities, so it can
// only say too much room, never too little.
func Fit(nodes []corev1.Node, pods []corev1.Pod, needs PodNeeds) Capacity {
	used := map[string]corev1.ResourceList{}
	count := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		count[p.Spec.NodeName]++
		u := used[p.Spec.NodeName]
		if u == nil {
			u = corev1.ResourceList{}
			used[p.Spec.NodeName] = u
		}
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				cur := u[name]
				cur.Add(q)
				u[name] = cur
			}
		}
	}
	var total int64
	bound := map[string]int{}
	eligible := 0
	for i := range nodes {
		n := &nodes[i]
		if !nodeUsable(n, needs) {
			continue
		}
		eligible++
		fit, by := fitOn(n, used[n.Name], count[n.Name], needs.Requests)
		total += fit
		bound[by]++
	}
	var why string
	switch {
	case eligible == 0:
		why = "no Ready, schedulable node matches the TaskManagers' node selector and tolerations"
	default:
		var parts []string
		for k, v := range bound {
			parts = append(parts, fmt.Sprintf("%s on %d", k, v))
		}
		sort.Strings(parts)
		why = fmt.Sprintf("%d of %d nodes eligible, room for %d TaskManagers (bounded by %s)", eligible, len(nodes), total, strings.Join(parts, ", "))
	}
	return Capacity{Fit: int32(min(total, 1<<30)), Why: why}
}

func nodeUsable(n *corev1.Node, needs PodNeeds) bool {
	if n.Spec.Unschedulable {
		return false
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false
	}
	for k, v := range needs.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for _, tol := range needs.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &t, false) {
				tolerated = true
			}
		}
		if !tolerated {
			return false
		}
	}
	return true
}

// fitOn is how many pods fit on one node, and the resource that bounds it.
func fitOn(n *corev1.Node, used corev1.ResourceList, pods int64, req corev1.ResourceList) (int64, string) {
	best, by := int64(1<<40), "nothing"
	if max := n.Status.Allocatable.Pods().Value(); max > 0 {
		best, by = max-pods, "pods"
	}
	for name, q := range req {
		if q.IsZero() {
			continue
		}
		alloc, ok := n.Status.Allocatable[name]
		if !ok {
			return 0, string(name)
		}
		free := alloc.DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		k := quotient(free, q)
		if k < best {
			best, by = k, string(name)
		}
	}
	return max(best, 0), by
}

func quotient(free, each resource.Quantity) int64 {
	if free.Sign() <= 0 {
		return 0
	}
	return free.MilliValue() / max(each.MilliValue(), 1)
}
