package flinkmemory

import (
	"fmt"
	"strings"
)

// DeriveTaskManager is TaskExecutorProcessUtils#processSpecFromConfig for
// a flat configuration: the TaskManager's memory, or Flink's refusal.
func DeriveTaskManager(settings map[string]string) (TaskManager, error) {
	c := conf(settings)
	var tm TaskManager
	_, heapSet := c.raw("taskmanager.memory.task.heap.size")
	_, managedSet := c.raw("taskmanager.memory.managed.size")
	p, err := c.process("taskmanager", heapSet && managedSet,
		func() (int64, error) { return c.taskManagerFromFine(&tm) },
		func(total int64) error { return c.taskManagerFromTotal(&tm, total) })
	if err != nil {
		return TaskManager{}, &Error{Message: err.Error(), Set: c.set("taskmanager.")}
	}
	tm.Process, tm.Flink, tm.Metaspace, tm.Overhead = p.process, p.flink, p.metaspace, p.overhead
	return tm, nil
}

// DeriveJobManager is JobManagerProcessUtils#processSpecFromConfig.
func DeriveJobManager(settings map[string]string) (JobManager, error) {
	c := conf(settings)
	var jm JobManager
	_, heapSet := c.raw("jobmanager.memory.heap.size")
	p, err := c.process("jobmanager", heapSet,
		func() (int64, error) { return c.jobManagerFromFine(&jm) },
		func(total int64) error { return c.jobManagerFromTotal(&jm, total) })
	if err != nil {
		return JobManager{}, &Error{Message: err.Error(), Set: c.set("jobmanager.")}
	}
	jm.Process, jm.Flink, jm.Metaspace, jm.Overhead = p.process, p.flink, p.metaspace, p.overhead
	return jm, nil
}

// jvm are the process-level parts.
type jvm struct{ process, flink, metaspace, overhead int64 }

// process is ProcessMemoryUtils#memoryProcessSpecFromConfig: the
// fine-grained options when all are set, else the total Flink memory,
// else the total process memory, else it fails.
func (c conf) process(prefix string, fine bool, fromFine func() (int64, error), fromTotal func(int64) error) (jvm, error) {
	flinkKey, processKey := prefix+".memory.flink.size", prefix+".memory.process.size"
	total, totalSet, err := c.size(flinkKey)
	if err != nil {
		return jvm{}, err
	}
	switch {
	case fine:
		// deriveProcessSpecWithExplicitInternalMemory.
		if total, err = fromFine(); err != nil {
			return jvm{}, err
		}
		return c.jvmFromFlink(prefix, total)
	case totalSet:
		// deriveProcessSpecWithTotalFlinkMemory.
		if err := fromTotal(total); err != nil {
			return jvm{}, err
		}
		return c.jvmFromFlink(prefix, total)
	}
	process, processSet, err := c.size(processKey)
	if err != nil {
		return jvm{}, err
	}
	if !processSet {
		fineKeys := prefix + ".memory.heap.size"
		if prefix == "taskmanager" {
			fineKeys = "taskmanager.memory.task.heap.size and taskmanager.memory.managed.size"
		}
		return jvm{}, fmt.Errorf("Either required fine-grained memory (%s), or Total Flink Memory size (%s), or Total Process Memory size (%s) need to be configured explicitly.", fineKeys, flinkKey, processKey)
	}
	// deriveProcessSpecWithTotalProcessMemory: metaspace and overhead
	// (its fraction of the process, within [min, max]) first; the Flink
	// memory is what is left.
	metaspace, _, err := c.size(prefix + ".memory.jvm-metaspace.size")
	if err != nil {
		return jvm{}, err
	}
	r, err := c.overheadRange(prefix)
	if err != nil {
		return jvm{}, err
	}
	overhead := r.withFraction(process)
	if sum, err := add(metaspace, overhead); err != nil || sum > process {
		return jvm{}, fmt.Errorf("Sum of configured JVM Metaspace (%s) and JVM Overhead (%s) exceed configured Total Process Memory (%s).", Human(metaspace), Human(overhead), Human(process))
	}
	flink := process - metaspace - overhead
	if err := fromTotal(flink); err != nil {
		return jvm{}, err
	}
	return jvm{process, flink, metaspace, overhead}, nil
}

// jvmFromFlink is #deriveJvmMetaspaceAndOverheadFromTotalFlinkMemory: with
// the process memory set the overhead is what it leaves after the Flink
// memory and metaspace, and must be within its range; else the overhead is
// derived by its inverse fraction.
func (c conf) jvmFromFlink(prefix string, flink int64) (jvm, error) {
	metaspace, _, err := c.size(prefix + ".memory.jvm-metaspace.size")
	if err != nil {
		return jvm{}, err
	}
	r, err := c.overheadRange(prefix)
	if err != nil {
		return jvm{}, err
	}
	withMetaspace, err := add(flink, metaspace)
	if err != nil {
		return jvm{}, err
	}
	process, set, err := c.size(prefix + ".memory.process.size")
	if err != nil {
		return jvm{}, err
	}
	if !set {
		overhead := r.withInverseFraction(withMetaspace)
		process, err := add(withMetaspace, overhead)
		if err != nil {
			return jvm{}, err
		}
		return jvm{process, flink, metaspace, overhead}, nil
	}
	if process < withMetaspace {
		return jvm{}, fmt.Errorf("The configured Total Process Memory size (%s) is less than the sum of the derived Total Flink Memory size (%s) and the configured or default JVM Metaspace size  (%s).", Human(process), Human(flink), Human(metaspace))
	}
	overhead := process - withMetaspace
	if !r.contains(overhead) {
		return jvm{}, fmt.Errorf("Derived JVM Overhead size (%s) is not in configured JVM Overhead range [%s, %s].", Human(overhead), Human(r.min), Human(r.max))
	}
	return jvm{process, flink, metaspace, overhead}, nil
}

func (c conf) overheadRange(prefix string) (rangeFraction, error) {
	return c.rangeFraction(prefix+".memory.jvm-overhead.min", prefix+".memory.jvm-overhead.max", prefix+".memory.jvm-overhead.fraction")
}

func (c conf) networkRange() (rangeFraction, error) {
	return c.rangeFraction("taskmanager.memory.network.min", "taskmanager.memory.network.max", "taskmanager.memory.network.fraction")
}

// taskManagerFixed reads the parts that only have sizes.
func (c conf) taskManagerFixed(tm *TaskManager) error {
	for _, o := range []struct {
		key string
		v   *int64
	}{
		{"taskmanager.memory.framework.heap.size", &tm.FrameworkHeap},
		{"taskmanager.memory.framework.off-heap.size", &tm.FrameworkOffHeap},
		{"taskmanager.memory.task.off-heap.size", &tm.TaskOffHeap},
	} {
		v, _, err := c.size(o.key)
		if err != nil {
			return err
		}
		*o.v = v
	}
	return nil
}

// managed is TaskExecutorFlinkMemoryUtils#
// deriveManagedMemoryAbsoluteOrWithFraction: its size, else its fraction
// of the total Flink memory.
func (c conf) managed(total int64) (int64, error) {
	if size, set, err := c.size("taskmanager.memory.managed.size"); err != nil || set {
		return size, err
	}
	f, err := c.fraction("taskmanager.memory.managed.fraction")
	if err != nil {
		return 0, err
	}
	if f < 0 || f >= 1 {
		return 0, fmt.Errorf("Inconsistently configured taskmanager.memory.managed.fraction (%v) and its min (0 bytes), max (%s) value", f, Human(1<<63-1))
	}
	return multiply(total, f), nil
}

// sumExceeds is the message of a sum of parts over the total Flink memory.
func sumExceeds(names []string, sizes []int64, total int64) error {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s)", n, Human(sizes[i]))
	}
	return fmt.Errorf("Sum of configured %s and %s exceed configured Total Flink Memory (%s).", strings.Join(parts[:len(parts)-1], ", "), parts[len(parts)-1], Human(total))
}

// networkRest is #sanityCheckNetworkMemoryWithExplicitlySetTotalFlinkAndHeapMemory.
func (c conf) networkRest(network int64) error {
	r, err := c.networkRange()
	if err != nil {
		return err
	}
	if !r.contains(network) {
		return fmt.Errorf("If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the Network Memory size is the rest of the Total Flink memory after subtracting all other configured types of memory, but the derived Network Memory is inconsistent with its configuration: Derived Network Memory size (%s) is not in configured Network Memory range [%s, %s].", Human(network), Human(r.min), Human(r.max))
	}
	return nil
}

// taskManagerFromTotal is TaskExecutorFlinkMemoryUtils#
// deriveFromTotalFlinkMemory. With the task heap set, the network memory
// is the rest; else managed and network memory (its fraction within
// [min, max]) come first and the task heap is the rest.
func (c conf) taskManagerFromTotal(tm *TaskManager, total int64) error {
	if err := c.taskManagerFixed(tm); err != nil {
		return err
	}
	managed, err := c.managed(total)
	if err != nil {
		return err
	}
	tm.Managed = managed
	if heap, set, err := c.size("taskmanager.memory.task.heap.size"); err != nil {
		return err
	} else if set {
		tm.TaskHeap = heap
		names := []string{"Framework Heap Memory", "Framework Off-Heap Memory", "Task Heap Memory", "Task Off-Heap Memory", "Managed Memory"}
		sizes := []int64{tm.FrameworkHeap, tm.FrameworkOffHeap, heap, tm.TaskOffHeap, managed}
		sum, err := add(sizes...)
		if err != nil || sum > total {
			return sumExceeds(names, sizes, total)
		}
		tm.Network = total - sum
		return c.networkRest(tm.Network)
	}
	r, err := c.networkRange()
	if err != nil {
		return err
	}
	tm.Network = r.withFraction(total)
	names := []string{"Framework Heap Memory", "Framework Off-Heap Memory", "Task Off-Heap Memory", "Managed Memory", "Network Memory"}
	sizes := []int64{tm.FrameworkHeap, tm.FrameworkOffHeap, tm.TaskOffHeap, managed, tm.Network}
	sum, err := add(sizes...)
	if err != nil || sum > total {
		return sumExceeds(names, sizes, total)
	}
	tm.TaskHeap = total - sum
	return nil
}

// taskManagerFromFine is TaskExecutorFlinkMemoryUtils#
// deriveFromRequiredFineGrainedOptions: the fine-grained sizes, and the
// network memory as the rest of a set total Flink memory (within its
// range), else by its inverse fraction.
func (c conf) taskManagerFromFine(tm *TaskManager) (int64, error) {
	if err := c.taskManagerFixed(tm); err != nil {
		return 0, err
	}
	var err error
	if tm.TaskHeap, _, err = c.size("taskmanager.memory.task.heap.size"); err != nil {
		return 0, err
	}
	if tm.Managed, _, err = c.size("taskmanager.memory.managed.size"); err != nil {
		return 0, err
	}
	names := []string{"Framework Heap Memory", "Framework Off-Heap Memory", "Task Heap Memory", "Task Off-Heap Memory", "Managed Memory"}
	sizes := []int64{tm.FrameworkHeap, tm.FrameworkOffHeap, tm.TaskHeap, tm.TaskOffHeap, tm.Managed}
	sum, sumErr := add(sizes...)
	total, set, err := c.size("taskmanager.memory.flink.size")
	if err != nil {
		return 0, err
	}
	if set {
		if sumErr != nil || sum > total {
			return 0, sumExceeds(names, sizes, total)
		}
		tm.Network = total - sum
		return total, c.networkRest(tm.Network)
	}
	if sumErr != nil {
		return 0, sumErr
	}
	r, err := c.networkRange()
	if err != nil {
		return 0, err
	}
	tm.Network = r.withInverseFraction(sum)
	return add(sum, tm.Network)
}

// jobManagerFromTotal is JobManagerFlinkMemoryUtils#deriveFromTotalFlinkMemory:
// the heap is what the off-heap memory leaves, and must be more than none.
func (c conf) jobManagerFromTotal(jm *JobManager, total int64) error {
	offHeap, _, err := c.size("jobmanager.memory.off-heap.size")
	if err != nil {
		return err
	}
	if total <= offHeap {
		return fmt.Errorf("The configured Total Flink Memory (%s) is less than the configured Off-heap Memory (%s).", Human(total), Human(offHeap))
	}
	jm.Heap, jm.OffHeap = total-offHeap, offHeap
	return nil
}

// jobManagerFromFine is JobManagerFlinkMemoryUtils#
// deriveFromRequiredFineGrainedOptions: the heap, and the off-heap memory
// (with a total Flink memory set: what it leaves, or, set too, exactly
// what adds up to it).
func (c conf) jobManagerFromFine(jm *JobManager) (int64, error) {
	heap, _, err := c.size("jobmanager.memory.heap.size")
	if err != nil {
		return 0, err
	}
	offHeap, _, err := c.size("jobmanager.memory.off-heap.size")
	if err != nil {
		return 0, err
	}
	total, set, err := c.size("jobmanager.memory.flink.size")
	if err != nil {
		return 0, err
	}
	if set {
		if _, explicit := c.raw("jobmanager.memory.off-heap.size"); explicit {
			if sum, err := add(heap, offHeap); err != nil || sum != total {
				return 0, fmt.Errorf("Sum of the configured JVM Heap Memory (%s) and the configured Off-heap Memory (%s) does not match the configured Total Flink Memory (%s). Please, make the configuration consistent or configure only one option: either JVM Heap or Total Flink Memory.", Human(heap), Human(offHeap), Human(total))
			}
		} else {
			if total < heap {
				return 0, fmt.Errorf("The configured JVM Heap Memory (%s) exceeds the configured Total Flink Memory (%s). Please, make the configuration consistent or configure only one option: either JVM Heap or Total Flink Memory.", Human(heap), Human(total))
			}
			offHeap = total - heap
		}
	}
	jm.Heap, jm.OffHeap = heap, offHeap
	return add(heap, offHeap)
}
