package flink

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{in: "1.17.1", want: Version{1, 17, 1}},
		{in: "2.0.0", want: Version{2, 0, 0}},
		{in: "1.17", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "1.x.1", wantErr: true},
		{in: "1.-1.1", wantErr: true},
	} {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.wantErr {
			t.Fatalf("ParseVersion(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestKeysFor(t *testing.T) {
	for _, tc := range []struct {
		version                         string
		file, interval, retained, haKey string
	}{
		{"1.17.1", "flink-conf.yaml", "execution.checkpointing.interval", "state.checkpoints.num-retained", "high-availability.type"},
		{"1.18.1", "flink-conf.yaml", "execution.checkpointing.interval", "state.checkpoints.num-retained", "high-availability.type"},
		{"1.19.1", "config.yaml", "execution.checkpointing.interval", "state.checkpoints.num-retained", "high-availability.type"},
		{"1.20.0", "config.yaml", "execution.checkpointing.interval", "execution.checkpointing.num-retained", "high-availability.type"},
		{"2.0.0", "config.yaml", "execution.checkpointing.interval", "execution.checkpointing.num-retained", "high-availability.type"},
	} {
		v, err := ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		k := KeysFor(v)
		if k.File != tc.file || k.CheckpointInterval != tc.interval || k.CheckpointsRetained != tc.retained || k.HighAvailabilityType != tc.haKey {
			t.Errorf("KeysFor(%s) = file %s, interval %s, retained %s, ha %s; want %s, %s, %s, %s",
				tc.version, k.File, k.CheckpointInterval, k.CheckpointsRetained, k.HighAvailabilityType,
				tc.file, tc.interval, tc.retained, tc.haKey)
		}
	}
}

func TestJobManagerURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Resolver
		want string
	}{
		{"a real cluster: the pod's own address", Resolver{}, "http://10.1.2.3:8081"},
		{"a per-pod template", Resolver{Override: "http://sim/clusters/{namespace}/{name}", PodOverride: "http://sim/clusters/{namespace}/{name}/jobmanagers/{pod}@{uid}"},
			"http://sim/clusters/ns/fc/jobmanagers/fc-jobmanager-0@u1"},
		{"only a cluster template: the cluster's address", Resolver{Override: "http://sim/clusters/{namespace}/{name}"}, "http://sim/clusters/ns/fc"},
	} {
		if got := tc.r.JobManagerURL("ns", "fc", "fc-jobmanager-0", "u1", "10.1.2.3"); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
