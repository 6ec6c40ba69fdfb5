package flinksim

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// The memory model a process derives before the start scripts launch its
// JVM (BashJavaUtils runs JobManagerProcessUtils and
// TaskExecutorProcessUtils): a configuration whose parts do not add up
// never starts a process.

// memoryKind is one process kind's memory options (ProcessMemoryOptions).
type memoryKind struct {
	who, prefix string
	// fine are the required fine-grained options; legacy the heap keys
	// 1.x maps onto the total process memory
	// (MemoryBackwardsCompatibilityUtils).
	fine, legacy []string
	// flink derives the Flink memory from its total, fineFlink the total
	// from the fine-grained options (FlinkMemoryUtils).
	flink     func(c *conf, total int64) error
	fineFlink func(c *conf) (int64, error)
}

var (
	taskManagerMemory = memoryKind{
		who: "TaskManager", prefix: "taskmanager",
		fine:   []string{"taskmanager.memory.task.heap.size", "taskmanager.memory.managed.size"},
		legacy: []string{"taskmanager.heap.size", "taskmanager.heap.mb"},
		flink:  (*conf).taskManagerFlinkFromTotal, fineFlink: (*conf).taskManagerFlinkFromFine,
	}
	jobManagerMemory = memoryKind{
		who: "JobManager", prefix: "jobmanager",
		fine:   []string{"jobmanager.memory.heap.size"},
		legacy: []string{"jobmanager.heap.size", "jobmanager.heap.mb"},
		flink:  (*conf).jobManagerFlinkFromTotal, fineFlink: (*conf).jobManagerFlinkFromFine,
	}
)

// processMemory is ProcessMemoryUtils#memoryProcessSpecFromConfig for the
// process kind: the fine-grained options, else the total Flink memory,
// else the total process memory (1.x still maps the legacy heap keys onto
// it first), else it fails. JobManagerProcessUtils and
// TaskExecutorProcessUtils wrap what fails in "<kind> memory configuration
// failed".
func (c *conf) processMemory(jobManager bool) error {
	k := taskManagerMemory
	if jobManager {
		k = jobManagerMemory
	}
	if err := c.deriveMemory(k); err != nil {
		return fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: %s memory configuration failed: %w", k.who, err)
	}
	return nil
}

func (c *conf) deriveMemory(k memoryKind) error {
	allFine := true
	for _, o := range k.fine {
		if _, set, err := c.memory(o); err != nil {
			return err
		} else if !set {
			allFine = false
		}
	}
	if allFine {
		// deriveProcessSpecWithExplicitInternalMemory.
		total, err := k.fineFlink(c)
		if err != nil {
			return err
		}
		return c.metaspaceAndOverheadFromFlink(k, total)
	}
	if total, set, err := c.memory(k.prefix + ".memory.flink.size"); err != nil {
		return err
	} else if set {
		// deriveProcessSpecWithTotalFlinkMemory.
		if err := k.flink(c, total); err != nil {
			return err
		}
		return c.metaspaceAndOverheadFromFlink(k, total)
	}
	process, set, err := c.memory(k.prefix + ".memory.process.size")
	if err != nil {
		return err
	}
	if !set && !c.version.AtLeast(2, 0) {
		for _, key := range k.legacy {
			if v, ok := c.values[key]; ok {
				if strings.HasSuffix(key, ".mb") {
					v += "m"
				}
				if process, err = parseMemorySize(v); err != nil {
					return parseErr(key, v, err)
				}
				set = true
				break
			}
		}
	}
	if !set {
		return fmt.Errorf("Either required fine-grained memory (%s), or Total Flink Memory size (Key: '%s.memory.flink.size' , default: null (fallback keys: [])), or Total Process Memory size (Key: '%s.memory.process.size' , default: null (fallback keys: [])) need to be configured explicitly.",
			strings.Join(k.fine, " and "), k.prefix, k.prefix)
	}
	// deriveProcessSpecWithTotalProcessMemory: metaspace and overhead
	// (its fraction of the process, within [min, max]) first, then the
	// Flink memory from what is left.
	metaspace, _, err := c.memory(k.prefix + ".memory.jvm-metaspace.size")
	if err != nil {
		return err
	}
	lo, hi, f, err := c.rangeFraction(k.prefix+".memory.jvm-overhead.min", k.prefix+".memory.jvm-overhead.max", k.prefix+".memory.jvm-overhead.fraction")
	if err != nil {
		return err
	}
	overhead := capToRange(multiply(process, f), lo, hi)
	if metaspace+overhead > process {
		return fmt.Errorf("Sum of configured JVM Metaspace (%s) and JVM Overhead (%s) exceed configured Total Process Memory (%s).",
			humanBytes(metaspace), humanBytes(overhead), humanBytes(process))
	}
	return k.flink(c, process-metaspace-overhead)
}

// metaspaceAndOverheadFromFlink is ProcessMemoryUtils#
// deriveJvmMetaspaceAndOverheadFromTotalFlinkMemory: with the total
// process memory also configured, the overhead is what the process leaves
// after the Flink memory and the metaspace, and must be within its range
// (#sanityCheckJvmOverhead); else it is derived by its inverse fraction,
// which always fits.
func (c *conf) metaspaceAndOverheadFromFlink(k memoryKind, total int64) error {
	process, set, err := c.memory(k.prefix + ".memory.process.size")
	if err != nil || !set {
		return err
	}
	metaspace, _, err := c.memory(k.prefix + ".memory.jvm-metaspace.size")
	if err != nil {
		return err
	}
	lo, hi, _, err := c.rangeFraction(k.prefix+".memory.jvm-overhead.min", k.prefix+".memory.jvm-overhead.max", k.prefix+".memory.jvm-overhead.fraction")
	if err != nil {
		return err
	}
	// A negative overhead fails MemorySize's own precondition first, with
	// a less telling message; the simulator gives the range's.
	if overhead := process - total - metaspace; overhead < lo || overhead > hi {
		return fmt.Errorf("Derived JVM Overhead size (%s) is not in configured JVM Overhead range [%s, %s].", humanBytes(overhead), humanBytes(lo), humanBytes(hi))
	}
	return nil
}

// taskManagerFlinkFromTotal is TaskExecutorFlinkMemoryUtils#
// deriveFromTotalFlinkMemory: framework heap and off-heap, task off-heap,
// managed memory (its size, else its fraction of the total) and, when the
// task heap is not set, network memory (its fraction within [min, max])
// must fit in the total, the task heap taking the rest; with the task
// heap set the network memory is the rest, and must be within its range.
func (c *conf) taskManagerFlinkFromTotal(total int64) error {
	fw, err := c.taskManagerFixed()
	if err != nil {
		return err
	}
	managed, err := c.managedMemory(total)
	if err != nil {
		return err
	}
	taskHeap, heapSet, err := c.memory("taskmanager.memory.task.heap.size")
	if err != nil {
		return err
	}
	if heapSet {
		sum := fw.heap + fw.offHeap + taskHeap + fw.taskOffHeap + managed
		if sum > total {
			return fmt.Errorf("Sum of configured Framework Heap Memory (%s), Framework Off-Heap Memory (%s), Task Heap Memory (%s), Task Off-Heap Memory (%s) and Managed Memory (%s) exceed configured Total Flink Memory (%s).",
				humanBytes(fw.heap), humanBytes(fw.offHeap), humanBytes(taskHeap), humanBytes(fw.taskOffHeap), humanBytes(managed), humanBytes(total))
		}
		return c.networkRest(total - sum)
	}
	lo, hi, f, err := c.networkRange()
	if err != nil {
		return err
	}
	network := capToRange(multiply(total, f), lo, hi)
	if sum := fw.heap + fw.offHeap + fw.taskOffHeap + managed + network; sum > total {
		return fmt.Errorf("Sum of configured Framework Heap Memory (%s), Framework Off-Heap Memory (%s), Task Off-Heap Memory (%s), Managed Memory (%s) and Network Memory (%s) exceed configured Total Flink Memory (%s).",
			humanBytes(fw.heap), humanBytes(fw.offHeap), humanBytes(fw.taskOffHeap), humanBytes(managed), humanBytes(network), humanBytes(total))
	}
	return nil
}

// taskManagerFlinkFromFine is TaskExecutorFlinkMemoryUtils#
// deriveFromRequiredFineGrainedOptions: with the total Flink memory also
// set, the fine-grained sizes must fit in it and the network memory is
// the rest (within its range); else the network memory is derived by its
// inverse fraction and the total is the sum.
func (c *conf) taskManagerFlinkFromFine() (int64, error) {
	fw, err := c.taskManagerFixed()
	if err != nil {
		return 0, err
	}
	taskHeap, _, err := c.memory("taskmanager.memory.task.heap.size")
	if err != nil {
		return 0, err
	}
	managed, _, err := c.memory("taskmanager.memory.managed.size")
	if err != nil {
		return 0, err
	}
	sum := fw.heap + fw.offHeap + taskHeap + fw.taskOffHeap + managed
	total, set, err := c.memory("taskmanager.memory.flink.size")
	if err != nil {
		return 0, err
	}
	if set {
		if sum > total {
			return 0, fmt.Errorf("Sum of configured Framework Heap Memory (%s), Framework Off-Heap Memory (%s), Task Heap Memory (%s), Task Off-Heap Memory (%s) and Managed Memory (%s) exceed configured Total Flink Memory (%s).",
				humanBytes(fw.heap), humanBytes(fw.offHeap), humanBytes(taskHeap), humanBytes(fw.taskOffHeap), humanBytes(managed), humanBytes(total))
		}
		return total, c.networkRest(total - sum)
	}
	lo, hi, f, err := c.networkRange()
	if err != nil {
		return 0, err
	}
	return sum + capToRange(multiply(sum, f/(1-f)), lo, hi), nil
}

// networkRest is #sanityCheckNetworkMemoryWithExplicitlySetTotalFlinkAnd-
// HeapMemory: network memory derived as the rest must be within its
// configured range.
func (c *conf) networkRest(network int64) error {
	lo, hi, _, err := c.networkRange()
	if err != nil {
		return err
	}
	if network < lo || network > hi {
		return fmt.Errorf("If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the Network Memory size is the rest of the Total Flink memory after subtracting all other configured types of memory, but the derived Network Memory is inconsistent with its configuration.")
	}
	return nil
}

// taskManagerSizes are the TaskManager's memory parts that have a size of
// their own (their defaults: 128m, 128m, 0).
type taskManagerSizes struct{ heap, offHeap, taskOffHeap int64 }

func (c *conf) taskManagerFixed() (taskManagerSizes, error) {
	var s taskManagerSizes
	for _, o := range []struct {
		key string
		v   *int64
	}{
		{"taskmanager.memory.framework.heap.size", &s.heap},
		{"taskmanager.memory.framework.off-heap.size", &s.offHeap},
		{"taskmanager.memory.task.off-heap.size", &s.taskOffHeap},
	} {
		v, _, err := c.memory(o.key)
		if err != nil {
			return s, err
		}
		*o.v = v
	}
	return s, nil
}

// managedMemory is #deriveManagedMemoryAbsoluteOrWithFraction.
func (c *conf) managedMemory(total int64) (int64, error) {
	if size, set, err := c.memory("taskmanager.memory.managed.size"); err != nil || set {
		return size, err
	}
	f, err := c.fraction("taskmanager.memory.managed.fraction")
	if err != nil {
		return 0, err
	}
	return multiply(total, f), nil
}

func (c *conf) networkRange() (lo, hi int64, f float64, err error) {
	return c.rangeFraction("taskmanager.memory.network.min", "taskmanager.memory.network.max", "taskmanager.memory.network.fraction")
}

// jobManagerFlinkFromTotal is JobManagerFlinkMemoryUtils#
// deriveFromTotalFlinkMemory: the off-heap memory must leave room for a
// heap.
func (c *conf) jobManagerFlinkFromTotal(total int64) error {
	offHeap, _, err := c.memory("jobmanager.memory.off-heap.size")
	if err != nil {
		return err
	}
	if total <= offHeap {
		return fmt.Errorf("The configured Total Flink Memory (%s) is less than the configured Off-heap Memory (%s).", humanBytes(total), humanBytes(offHeap))
	}
	return nil
}

// jobManagerFlinkFromFine is JobManagerFlinkMemoryUtils#
// deriveFromRequiredFineGrainedOptions without a total Flink memory: the
// heap plus the off-heap memory. (Its check of both against a configured
// total Flink memory is not modelled.)
func (c *conf) jobManagerFlinkFromFine() (int64, error) {
	heap, _, err := c.memory("jobmanager.memory.heap.size")
	if err != nil {
		return 0, err
	}
	offHeap, _, err := c.memory("jobmanager.memory.off-heap.size")
	return heap + offHeap, err
}

// rangeFraction is ProcessMemoryUtils#getRangeFraction's parts.
func (c *conf) rangeFraction(minKey, maxKey, fractionKey string) (lo, hi int64, f float64, err error) {
	if lo, _, err = c.memory(minKey); err != nil {
		return
	}
	if hi, _, err = c.memory(maxKey); err != nil {
		return
	}
	f, err = c.fraction(fractionKey)
	return
}

// fraction reads a Float option: Configuration#getFloat, widened to the
// double MemorySize#multiply takes.
func (c *conf) fraction(option string) (float64, error) {
	f, err := c.float(option)
	return float64(float32(f)), err
}

// multiply is MemorySize#multiply: BigDecimal.valueOf(bytes) ×
// BigDecimal.valueOf(multiplier), truncated to a long.
func multiply(bytes int64, multiplier float64) int64 {
	m, _ := new(big.Rat).SetString(strconv.FormatFloat(multiplier, 'g', -1, 64))
	p := new(big.Rat).Mul(new(big.Rat).SetInt64(bytes), m)
	return new(big.Int).Quo(p.Num(), p.Denom()).Int64()
}

// capToRange is ProcessMemoryUtils#capToMinMax.
func capToRange(v, lo, hi int64) int64 {
	return min(max(v, lo), hi)
}
