package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// cpuMeter reads the CPU time of the control plane's processes, the
// operator's and the bench's own, so each phase's can be told apart: on a
// machine of two cores they share, a phase is as slow as the CPU it
// needs, and where it goes says what to make cheaper. The zero meter
// measures nothing.
type cpuMeter struct {
	pids func() map[string]int
	op   *operatorProc
}

// cpuSample is CPU seconds by process, since each started.
type cpuSample map[string]float64

// benchProcess names the bench itself (its client and the simulator).
const benchProcess = "bench (client, Flink simulator)"

func (m cpuMeter) sample() cpuSample {
	if m.pids == nil {
		return nil
	}
	s := cpuSample{}
	for name, pid := range m.pids() {
		s[name] = cpuSeconds(pid)
	}
	if m.op != nil {
		s["datapilot"] = m.op.cpuSeconds()
	}
	s[benchProcess] = cpuSeconds(os.Getpid())
	return s
}

// with is the meter that also reads the process pid, as name.
func (m cpuMeter) with(name string, pid int) cpuMeter {
	pids := m.pids
	m.pids = func() map[string]int {
		all := map[string]int{name: pid}
		if pids != nil {
			maps.Copy(all, pids())
		}
		return all
	}
	return m
}

// since is the CPU seconds spent by each process from s0 to s.
func (s cpuSample) since(s0 cpuSample) cpuSample {
	d := cpuSample{}
	for k, v := range s {
		d[k] = v - s0[k]
	}
	return d
}

func (s cpuSample) total() float64 {
	t := 0.0
	for _, v := range s {
		t += v
	}
	return t
}

// format lists the processes, most CPU first, per cluster in ms.
func (s cpuSample) format(clusters int) string {
	names := slices.Collect(maps.Keys(s))
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case s[a] > s[b]:
			return -1
		case s[a] < s[b]:
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.0f", n, 1000*s[n]/float64(clusters)))
	}
	return strings.Join(parts, ", ")
}
