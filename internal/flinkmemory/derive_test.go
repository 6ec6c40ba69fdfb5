package flinkmemory

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const mb = 1 << 20

// The expected sizes are Flink's: the default configuration's 1728m
// TaskManager and 1600m JobManager as Flink's logs print them (managed
// 536870920 bytes, network 134217730, task heap 402653174: the fractions
// are Floats widened to doubles, 0.4 → 0.4000000059604645, and
// BigDecimal truncates the products), and larger ones worked through
// ProcessMemoryUtils's arithmetic the same way.
func TestDeriveTaskManager(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     TaskManager
	}{{
		name:     "the distribution's default, 1728m",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m"},
		want: TaskManager{Process: 1728 * mb, Flink: 1280 * mb, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 402653174, Network: 134217730, Managed: 536870920, Metaspace: 256 * mb, Overhead: 192 * mb},
	}, {
		name:     "4g: overhead and network by their fractions",
		settings: map[string]string{"taskmanager.memory.process.size": "4096m"},
		want: TaskManager{Process: 4096 * mb, Flink: 3597035104, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 1530082070, Network: 359703515, Managed: 1438814063, Metaspace: 256 * mb, Overhead: 429496736},
	}, {
		name:     "task heap set: network is the rest",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.task.heap.size": "384 mb"},
		want: TaskManager{Process: 1728 * mb, Flink: 1280 * mb, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 384 * mb, Network: 134217720, Managed: 536870920, Metaspace: 256 * mb, Overhead: 192 * mb},
	}, {
		name:     "total Flink memory set with the process: overhead is the rest",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.flink.size": "1280m"},
		want: TaskManager{Process: 1728 * mb, Flink: 1280 * mb, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 402653174, Network: 134217730, Managed: 536870920, Metaspace: 256 * mb, Overhead: 192 * mb},
	}, {
		name:     "fine-grained alone: network and overhead by inverse fractions",
		settings: map[string]string{"taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"},
		want: TaskManager{Process: 1961070139, Flink: 1491308091, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 512 * mb, Network: 149130811, Managed: 512 * mb, Metaspace: 256 * mb, Overhead: 192 * mb},
	}, {
		name:     "managed memory by its deprecated key",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.size": "256m"},
		want: TaskManager{Process: 1728 * mb, Flink: 1280 * mb, FrameworkHeap: 128 * mb, FrameworkOffHeap: 128 * mb,
			TaskHeap: 671088638, Network: 134217730, Managed: 256 * mb, Metaspace: 256 * mb, Overhead: 192 * mb},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DeriveTaskManager(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDeriveJobManager(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     JobManager
	}{{
		name:     "the distribution's default, 1600m",
		settings: map[string]string{"jobmanager.memory.process.size": "1600m"},
		want:     JobManager{Process: 1600 * mb, Flink: 1152 * mb, Heap: 1024 * mb, OffHeap: 128 * mb, Metaspace: 256 * mb, Overhead: 192 * mb},
	}, {
		name:     "2g",
		settings: map[string]string{"jobmanager.memory.process.size": "2g"},
		want:     JobManager{Process: 2048 * mb, Flink: 1664299824, Heap: 1530082096, OffHeap: 128 * mb, Metaspace: 256 * mb, Overhead: 214748368},
	}, {
		name:     "heap and total Flink memory: off-heap is the rest",
		settings: map[string]string{"jobmanager.memory.process.size": "1600m", "jobmanager.memory.flink.size": "1152m", "jobmanager.memory.heap.size": "1000m"},
		want:     JobManager{Process: 1600 * mb, Flink: 1152 * mb, Heap: 1000 * mb, OffHeap: 152 * mb, Metaspace: 256 * mb, Overhead: 192 * mb},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DeriveJobManager(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Each configuration here makes Flink's entrypoint fail before the JVM
// starts; the message is Flink's, with the sizes it computed.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		jm       bool
		settings map[string]string
		want     string
		set      []string
	}{{
		name:     "an 800Mi TaskManager",
		settings: map[string]string{"taskmanager.memory.process.size": "800m"},
		want:     "Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory (128.000mb (134217728 bytes)), Task Off-Heap Memory (0 bytes), Managed Memory (140.800mb (147639503 bytes)) and Network Memory (64.000mb (67108864 bytes)) exceed configured Total Flink Memory (352.000mb (369098752 bytes)).",
		set:      []string{"taskmanager.memory.process.size"},
	}, {
		name:     "a TaskManager smaller than metaspace and overhead",
		settings: map[string]string{"taskmanager.memory.process.size": "400m"},
		want:     "Sum of configured JVM Metaspace (256.000mb (268435456 bytes)) and JVM Overhead (192.000mb (201326592 bytes)) exceed configured Total Process Memory (400.000mb (419430400 bytes)).",
	}, {
		name:     "a managed fraction that leaves no task heap",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.managed.fraction": "0.9"},
		want:     "Managed Memory (1.125gb (1207959520 bytes)) and Network Memory (128.000mb (134217730 bytes)) exceed configured Total Flink Memory (1.250gb (1342177280 bytes)).",
		set:      []string{"taskmanager.memory.managed.fraction", "taskmanager.memory.process.size"},
	}, {
		name:     "a managed fraction of 1",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.managed.fraction": "1"},
		want:     "Inconsistently configured taskmanager.memory.managed.fraction (1)",
	}, {
		name:     "a task heap larger than the Flink memory",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.task.heap.size": "1g"},
		want:     "Task Heap Memory (1024.000mb (1073741824 bytes)), Task Off-Heap Memory (0 bytes) and Managed Memory (512.000mb (536870920 bytes)) exceed configured Total Flink Memory (1.250gb (1342177280 bytes)).",
	}, {
		name:     "a task heap that leaves the network memory below its minimum",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.task.heap.size": "500m"},
		want:     "Derived Network Memory size (12.000mb (12582904 bytes)) is not in configured Network Memory range [64.000mb (67108864 bytes)",
	}, {
		name:     "fine-grained sizes that leave the process's overhead below its minimum",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"},
		want:     "Derived JVM Overhead size (49.778mb (52195781 bytes)) is not in configured JVM Overhead range [192.000mb (201326592 bytes), 1024.000mb (1073741824 bytes)].",
	}, {
		name:     "a network minimum by its deprecated key",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.network.memory.min": "700m"},
		want:     "and Network Memory (700.000mb (734003200 bytes)) exceed configured Total Flink Memory",
		set:      []string{"taskmanager.memory.process.size", "taskmanager.network.memory.min"},
	}, {
		name:     "a network minimum above its maximum",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.network.min": "2g", "taskmanager.memory.network.max": "1g"},
		want:     "Inconsistently configured taskmanager.memory.network.fraction",
	}, {
		name:     "a size Flink cannot parse",
		settings: map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.memory.managed.size": "lots"},
		want:     "Could not parse value 'lots' for key 'taskmanager.memory.managed.size'",
	}, {
		name:     "a JobManager whose Flink memory the off-heap takes",
		jm:       true,
		settings: map[string]string{"jobmanager.memory.process.size": "500m"},
		want:     "The configured Total Flink Memory (52.000mb (54525952 bytes)) is less than the configured Off-heap Memory (128.000mb (134217728 bytes)).",
	}, {
		name:     "a JobManager heap larger than its process",
		jm:       true,
		settings: map[string]string{"jobmanager.memory.process.size": "1600m", "jobmanager.memory.heap.size": "2g"},
		want:     "The configured Total Process Memory size (1.563gb (1677721600 bytes)) is less than the sum of the derived Total Flink Memory size (2.125gb (2281701376 bytes))",
	}, {
		name:     "JobManager heap and off-heap that do not add up to its Flink memory",
		jm:       true,
		settings: map[string]string{"jobmanager.memory.process.size": "1600m", "jobmanager.memory.flink.size": "1g", "jobmanager.memory.heap.size": "512m", "jobmanager.memory.off-heap.size": "256m"},
		want:     "Sum of the configured JVM Heap Memory (512.000mb (536870912 bytes)) and the configured Off-heap Memory (256.000mb (268435456 bytes)) does not match the configured Total Flink Memory (1024.000mb (1073741824 bytes)).",
	}, {
		name:     "a JobManager heap above its Flink memory",
		jm:       true,
		settings: map[string]string{"jobmanager.memory.process.size": "1600m", "jobmanager.memory.flink.size": "1g", "jobmanager.memory.heap.size": "2g"},
		want:     "The configured JVM Heap Memory (2.000gb (2147483648 bytes)) exceeds the configured Total Flink Memory (1024.000mb (1073741824 bytes)).",
	}, {
		name:     "no memory at all",
		settings: map[string]string{},
		want:     "Either required fine-grained memory (taskmanager.memory.task.heap.size and taskmanager.memory.managed.size), or Total Flink Memory size (taskmanager.memory.flink.size), or Total Process Memory size (taskmanager.memory.process.size) need to be configured explicitly.",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.jm {
				_, err = DeriveJobManager(tc.settings)
			} else {
				_, err = DeriveTaskManager(tc.settings)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("admitted (%v)", err)
			}
			if !strings.Contains(e.Message, tc.want) {
				t.Errorf("message %q\nwant it to contain %q", e.Message, tc.want)
			}
			if tc.set != nil && !slices.Equal(e.Set, tc.set) {
				t.Errorf("set keys %v, want %v", e.Set, tc.set)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1728m": 1728 * mb, "1 gb": 1 << 30, " 64 MB ": 64 * mb, "0 bytes": 0, "100": 100, "2t": 2 << 40,
		"512kibibytes": 512 << 10, "3 Mebibytes": 3 * mb,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "m", "1.5g", "12 parsecs", "-1m", "99999999999999999999"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestHuman(t *testing.T) {
	for b, want := range map[int64]string{
		0: "0 bytes", 1024: "1024 bytes", 1 << 30: "1024.000mb (1073741824 bytes)", 1677721600: "1.563gb (1677721600 bytes)",
		369098752: "352.000mb (369098752 bytes)", 147639503: "140.800mb (147639503 bytes)",
	} {
		if got := Human(b); got != want {
			t.Errorf("Human(%d) = %q, want %q", b, got, want)
		}
	}
}
