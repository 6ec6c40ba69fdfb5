package main

import (
	"math"
	"reflect"
	"testing"
)

func TestApacheTargetCapacity(t *testing.T) {
	for _, c := range []struct {
		name                 string
		catchUp, input, util float64
		restart              bool
		want                 float64
	}{
		{"at the target", 10, 700, 0.7, false, 1010},
		{"with the restart", 10, 700, 0.7, true, 1010 + 700*300/1800.0},
		{"above 1 is clamped to 1", 10, 700, 1.2, false, 710},
		{"at 0 it is infinite", 10, 700, 0, true, math.Inf(1)},
		{"below 0 is clamped to 0", 10, 700, -0.1, false, math.Inf(1)},
		{"rounded", 0.4, 1, 1, false, 1},
	} {
		if got := targetCapacity(c.catchUp, c.input, c.util, c.restart); got != math.Round(c.want) {
			t.Errorf("%s: targetCapacity = %v, want %v", c.name, got, math.Round(c.want))
		}
	}
}

func TestApacheBand(t *testing.T) {
	for _, c := range []struct {
		name         string
		lag, input   float64
		backlog      bool
		upper, lower float64
	}{
		{"no lag", 0, 1000, false, 1.0, 0.4},
		{"lag of 4 min", 240000, 1000, false, 1.0, 0.4},
		{"lag of 6 min", 360000, 1000, true, 1.0, 0},
		{"lag and no input", 1, 0, true, 1.0, 0},
		{"no lag and no input", 0, 0, false, 1.0, 0.4},
	} {
		backlog := processingBacklog(c.lag, c.input)
		upper, lower := band(backlog)
		if backlog != c.backlog || math.Abs(upper-c.upper) > 1e-9 || math.Abs(lower-c.lower) > 1e-9 {
			t.Errorf("%s: backlog %v, band %v–%v; want %v, %v–%v", c.name, backlog, lower, upper, c.backlog, c.lower, c.upper)
		}
	}
}

// TestApacheDelayedScaleDown runs apply over a few evaluations of a
// two-vertex job at parallelism 4 and 4.
func TestApacheDelayedScaleDown(t *testing.T) {
	type step struct {
		now   float64
		plans []vertexPlan
		want  []int
	}
	in := func(n int) vertexPlan { return vertexPlan{need: n, known: true} }
	out := func(n int) vertexPlan { return vertexPlan{need: n, outside: true, known: true} }
	unknown := vertexPlan{need: 4}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"an in-band scale-down is recorded and goes once another vertex leaves the band", []step{
			{0, []vertexPlan{in(2), in(4)}, nil},
			{3600, []vertexPlan{in(2), out(8)}, []int{2, 8}},
		}},
		{"a due scale-down recommended in the band does not rescale", []step{
			{0, []vertexPlan{in(2), in(4)}, nil},
			{3600, []vertexPlan{in(2), in(4)}, nil},
		}},
		{"a due scale-down rescales with the flag of the recommendation it goes to", []step{
			{0, []vertexPlan{out(3), in(4)}, nil},
			{1200, []vertexPlan{in(2), in(4)}, nil},
			{3600, []vertexPlan{in(2), in(4)}, []int{3, 4}},
		}},
		{"the highest of the last interval, not since the first trigger", []step{
			{0, []vertexPlan{out(3), in(4)}, nil},
			{1200, []vertexPlan{out(2), in(4)}, nil},
			{3660, []vertexPlan{out(2), in(4)}, []int{2, 4}},
		}},
		{"once the highest leaves the window, its flag goes with it", []step{
			{0, []vertexPlan{out(3), in(4)}, nil},
			{1200, []vertexPlan{in(2), in(4)}, nil},
			{3660, []vertexPlan{in(2), in(4)}, nil},
		}},
		{"a vertex with no change does not count as outside", []step{
			{0, []vertexPlan{in(2), out(4)}, nil},
		}},
		{"an in-band scale-up goes with an out-of-band one", []step{
			{0, []vertexPlan{in(5), out(8)}, []int{5, 8}},
		}},
		{"no change clears a delayed scale-down, an unknown rate keeps it", []step{
			{0, []vertexPlan{in(2), in(2)}, nil},
			{600, []vertexPlan{in(4), unknown}, nil},
			{3600, []vertexPlan{out(2), out(2)}, []int{4, 2}},
		}},
		{"a rescale clears every delayed scale-down", []step{
			{0, []vertexPlan{in(2), in(4)}, nil},
			{600, []vertexPlan{in(4), out(8)}, []int{4, 8}},
			{3600, []vertexPlan{out(2), in(4)}, nil},
		}},
	} {
		a := newApache()
		for _, s := range c.steps {
			if got := a.apply(s.now, []int{4, 4}, s.plans); !reflect.DeepEqual(got, s.want) {
				t.Errorf("%s: at %vs apply = %v, want %v", c.name, s.now, got, s.want)
			}
		}
	}
}
