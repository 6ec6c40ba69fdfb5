package resources

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinkmemory"
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

// MemoryErrors are Flink's refusals of the cluster's memory: a JobManager
// or TaskManager whose configuration Flink's entrypoint would not start
// (ProcessMemoryUtils, see flinkmemory), each on the field that sized the
// process, with Flink's reason and the user's memory keys that entered it.
// The configuration is the one RenderConfig writes for memory: the user's
// keys, then the process sizes.
func MemoryErrors(fc *v1.FlinkCluster) field.ErrorList {
	settings := map[string]string{}
	for k, v := range fc.Spec.FlinkConfiguration {
		settings[k] = string(v)
	}
	jm, tm := jobManagerMemory(fc), taskManagerMemory(fc)
	settings["jobmanager.memory.process.size"] = flinkMemory(jm)
	settings["taskmanager.memory.process.size"] = flinkMemory(tm)
	var errs field.ErrorList
	if _, err := flinkmemory.DeriveJobManager(settings); err != nil {
		errs = append(errs, memoryError(fc, field.NewPath("spec", "jobManager", "resources"), fc.Spec.JobManager.Resources, "JobManager", "jobmanager.memory.process.size", jm, err))
	}
	if _, err := flinkmemory.DeriveTaskManager(settings); err != nil {
		errs = append(errs, memoryError(fc, field.NewPath("spec", "taskManager", "resources"), fc.Spec.TaskManager.Resources, "TaskManager", "taskmanager.memory.process.size", tm, err))
	}
	return errs
}

// memoryError names the field the process size came from (the limit, else
// the request, else the default a limit would replace) and what Flink says.
func memoryError(fc *v1.FlinkCluster, resources *field.Path, r corev1.ResourceRequirements, who, processKey string, size resource.Quantity, err error) *field.Error {
	path, value := resources.Child("limits", "memory"), size.String()
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		if _, ok := r.Requests[corev1.ResourceMemory]; ok {
			path = resources.Child("requests", "memory")
		} else {
			value = "unset, so the default " + value
		}
	}
	var users []string
	var e *flinkmemory.Error
	if errors.As(err, &e) {
		for _, k := range e.Set {
			if v, ok := fc.Spec.FlinkConfiguration[k]; ok && k != processKey {
				users = append(users, fmt.Sprintf("%s=%s", k, v))
			}
		}
	}
	with := ""
	if len(users) > 0 {
		with = " and spec.flinkConfiguration's " + strings.Join(users, ", ")
	}
	return field.Invalid(path, value, fmt.Sprintf("Flink %s would refuse to start the %s with %s %s%s: %v", fc.Spec.Version, who, processKey, flinkMemory(size), with, err))
}
