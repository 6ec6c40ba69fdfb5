package main

import "testing"

func TestSeries(t *testing.T) {
	for _, tc := range []struct {
		in   series
		want string
	}{
		{nil, "n/a"},
		{series{2}, "2.00"},
		{series{3, 1, 2}, "2.00 (1.00–3.00)"},
		{series{4, 1, 2, 3}, "2.50 (1.00–4.00)"},
	} {
		if got := tc.in.format(perCluster); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.in, got, tc.want)
		}
	}
}
