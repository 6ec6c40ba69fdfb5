package resources

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/datapilot/datapilot/api/v1"
)

func TestHAIdentity(t *testing.T) {
	const uid = "6f1c2a9e-3b7d-4c10-9a55-0e8d2f4b7c31"
	cluster := func(ns, name string, uid types.UID, st v1.FlinkClusterStatus) *v1.FlinkCluster {
		fc := &v1.FlinkCluster{Status: st}
		fc.Namespace, fc.Name, fc.UID = ns, name, uid
		return fc
	}
	recorded := &v1.HighAvailabilityStatus{ClusterID: "team-a-prod-recorded", KubernetesClusterID: "prod-recorded"}
	long := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name string
		fc   *v1.FlinkCluster
		want v1.HighAvailabilityStatus
	}{
		{"new cluster: from its UID", cluster("team-a", "prod", uid, v1.FlinkClusterStatus{}),
			v1.HighAvailabilityStatus{ClusterID: "team-a-prod-" + uid, KubernetesClusterID: "prod-" + uid}},
		{"the namesake in another namespace differs by its UID", cluster("team", "a-prod", "0b2e8c71-5d4f-4a9b-8e3c-7f1a6d2b9e40", v1.FlinkClusterStatus{}),
			v1.HighAvailabilityStatus{ClusterID: "team-a-prod-0b2e8c71-5d4f-4a9b-8e3c-7f1a6d2b9e40", KubernetesClusterID: "a-prod-0b2e8c71-5d4f-4a9b-8e3c-7f1a6d2b9e40"}},
		{"recorded: kept, whatever the UID", cluster("team-a", "prod", uid, v1.FlinkClusterStatus{ObservedGeneration: 4, HighAvailability: recorded}), *recorded},
		{"deployed by an older operator: the name-based identity it runs under", cluster("team-a", "prod", uid, v1.FlinkClusterStatus{ObservedGeneration: 2}),
			v1.HighAvailabilityStatus{ClusterID: "team-a-prod", KubernetesClusterID: "prod"}},
		{"never stored, no UID", cluster("team-a", "prod", "", v1.FlinkClusterStatus{}),
			v1.HighAvailabilityStatus{ClusterID: "team-a-prod", KubernetesClusterID: "prod"}},
		{"a long name is shortened to fit the label", cluster("ns", long, uid, v1.FlinkClusterStatus{}),
			v1.HighAvailabilityStatus{ClusterID: "ns-" + long + "-" + uid, KubernetesClusterID: long[:26] + "-" + uid}},
		{"no dash left dangling", cluster("ns", strings.Repeat("b", 25)+"-x", uid, v1.FlinkClusterStatus{}),
			v1.HighAvailabilityStatus{ClusterID: "ns-" + strings.Repeat("b", 25) + "-x-" + uid, KubernetesClusterID: strings.Repeat("b", 25) + "-" + uid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HAIdentity(tc.fc)
			if got != tc.want {
				t.Errorf("HAIdentity = %+v, want %+v", got, tc.want)
			}
			// kubernetes.cluster-id is a label value on Flink's ConfigMaps,
			// and their names start with it.
			if errs := validation.IsValidLabelValue(got.KubernetesClusterID); len(errs) > 0 {
				t.Errorf("kubernetes.cluster-id %q is no label value: %v", got.KubernetesClusterID, errs)
			}
			if errs := validation.IsDNS1123Subdomain(got.KubernetesClusterID + "-0123456789abcdef0123456789abcdef-config-map"); len(errs) > 0 {
				t.Errorf("Flink's job ConfigMap name from %q is invalid: %v", got.KubernetesClusterID, errs)
			}
		})
	}
}

// TestHAIdentityRendered: the rendered configuration carries the identity,
// and a recorded one survives a re-render of a cluster whose UID or name
// would give another.
func TestHAIdentityRendered(t *testing.T) {
	fc := loadExample(t, "realtime-warehouse.yaml") // ZooKeeper HA
	fc.UID = "6f1c2a9e-3b7d-4c10-9a55-0e8d2f4b7c31"
	cfg, err := RenderConfig(fc, platformStorage)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Settings["high-availability.cluster-id"], fc.Namespace+"-"+fc.Name+"-"+string(fc.UID); got != want {
		t.Errorf("high-availability.cluster-id = %q, want %q", got, want)
	}
	fc.Status.ObservedGeneration = 1
	fc.Status.HighAvailability = &v1.HighAvailabilityStatus{ClusterID: "recorded", KubernetesClusterID: "recorded"}
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	if cfg, err = RenderConfig(fc, platformStorage); err != nil {
		t.Fatal(err)
	}
	if cfg.Settings["high-availability.cluster-id"] != "recorded" || cfg.Settings["kubernetes.cluster-id"] != "recorded" {
		t.Errorf("recorded identity not rendered: %v", cfg.Settings)
	}
}
