package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestConfigDriftSays: what a repair's event says of a live ConfigMap that
// is not the rendered one (the end-to-end test sees the first repair's
// words only: the events API merges a second repair of the same cluster
// version into the first one's series).
func TestConfigDriftSays(t *testing.T) {
	want := map[string]string{"flink-conf.yaml": "a: 1\n", "log4j-console.properties": "x"}
	for _, tc := range []struct {
		name string
		live corev1.ConfigMap
		says string
	}{
		{"as rendered", corev1.ConfigMap{Data: map[string]string{"flink-conf.yaml": "a: 1\n", "log4j-console.properties": "x"}}, ""},
		{"a changed file", corev1.ConfigMap{Data: map[string]string{"flink-conf.yaml": "a: 1\nrest.port: 1\n", "log4j-console.properties": "x"}},
			"changed flink-conf.yaml"},
		{"a removed file", corev1.ConfigMap{Data: map[string]string{"flink-conf.yaml": "a: 1\n"}}, "changed log4j-console.properties"},
		{"an added binary file", corev1.ConfigMap{Data: want, BinaryData: map[string][]byte{"log4j.properties": []byte("x")}},
			"added log4j.properties"},
		{"both", corev1.ConfigMap{Data: map[string]string{"flink-conf.yaml": "b: 2\n", "log4j-console.properties": "x", "extra": "y"}},
			"changed flink-conf.yaml; added extra"},
	} {
		d := configDrift{changed: changedFiles(tc.live.Data, want), extra: extraFiles(&tc.live, want)}
		if got := d.String(); got != tc.says || d.drifted() != (tc.says != "") {
			t.Errorf("%s: says %q (drifted %v), want %q", tc.name, got, d.drifted(), tc.says)
		}
	}
}
