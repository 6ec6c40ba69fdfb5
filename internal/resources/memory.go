package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The process sizes when a container states no memory: the official
// image's own defaults (jobmanager.memory.process.size and
// taskmanager.memory.process.size in flink-dist's default conf), which a
// mounted configuration would otherwise lose. Without any memory option
// Flink refuses to start (ProcessMemoryUtils: "Either required fine-grained
// memory ... or Total Process Memory size ... need to be configured").
var (
	DefaultJobManagerMemory  = resource.MustParse("1600Mi")
	DefaultTaskManagerMemory = resource.MustParse("1728Mi")
)

// processMemory is the memory one Flink process may use: the container's
// limit, else its request, else the default. Flink's process size covers
// the whole JVM (heap, off-heap, metaspace, overhead), so it equals what
// the container may use and never exceeds the limit.
func processMemory(r corev1.ResourceRequirements, def resource.Quantity) resource.Quantity {
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		return q
	}
	if q, ok := r.Requests[corev1.ResourceMemory]; ok {
		return q
	}
	return def
}

// flinkMemory renders a process size in Flink's MemorySize syntax, where
// "m" means mebibytes; rounding down keeps it within the container.
func flinkMemory(q resource.Quantity) string {
	return strconv.FormatInt(q.Value()/(1<<20), 10) + "m"
}

// containerResources are the container's requirements with the memory
// request and limit both set to the process size: a JVM sized to its limit
// uses all of it, so a lower request would only invite eviction.
func containerResources(r corev1.ResourceRequirements, mem resource.Quantity) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	for k, v := range r.Limits {
		out.Limits[k] = v
	}
	for k, v := range r.Requests {
		out.Requests[k] = v
	}
	for k, v := range r.Limits {
		// Requests default to limits in the API server; saying so here
		// keeps the applied object and the stored one identical.
		if _, ok := out.Requests[k]; !ok {
			out.Requests[k] = v
		}
	}
	out.Limits[corev1.ResourceMemory] = mem
	out.Requests[corev1.ResourceMemory] = mem
	return out
}
