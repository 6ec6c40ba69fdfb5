package main

import (
	"fmt"
	"slices"
	"time"
)

// series is one figure measured once per round: the report gives its
// median and its spread (lowest–highest), since on a shared machine one
// round ranks nothing.
type series []float64

// median is the middle value (the mean of the two middle ones).
func (s series) median() float64 {
	if len(s) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(s))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// format prints "median (lowest–highest)", or the one value of one round.
func (s series) format(f func(float64) string) string {
	if len(s) == 0 {
		return "n/a"
	}
	if len(s) == 1 {
		return f(s[0])
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.median()), f(slices.Min(s)), f(slices.Max(s)))
}

func seconds(v float64) string {
	return (time.Duration(v * float64(time.Second))).Round(time.Millisecond).String()
}

func ratio(v float64) string { return fmt.Sprintf("%.2f×", v) }

func perCluster(v float64) string { return fmt.Sprintf("%.2f", v) }

// collect gathers one figure of every round.
func collect[T any](rounds []T, f func(T) (float64, bool)) series {
	var s series
	for _, r := range rounds {
		if v, ok := f(r); ok {
			s = append(s, v)
		}
	}
	return s
}
