package v1alpha1

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/randfill"

	v1 "github.com/datapilot/datapilot/api/v1"
)

func meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: "orders", Namespace: "analytics", Generation: 3, ResourceVersion: "42",
		Labels:      map[string]string{"team": "payments"},
		Annotations: map[string]string{"note": "kept"},
	}
}

func status() v1.FlinkClusterStatus {
	return v1.FlinkClusterStatus{
		ObservedGeneration: 3, Phase: v1.PhaseRunning,
		Conditions:  []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "AllReady", ObservedGeneration: 3}},
		TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2, Ready: "2/2"},
		Selector:    "app=orders",
	}
}

// The pairs each test converts in both directions: the v1alpha1 object and
// the v1 object it is equivalent to.
var pairs = []struct {
	name  string
	alpha FlinkCluster
	hub   v1.FlinkCluster
}{
	{
		name:  "minimal, no kafka",
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 2}}},
		hub:   v1.FlinkCluster{ObjectMeta: meta(), Spec: v1.FlinkClusterSpec{Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 2}}},
	},
	{
		name: "kafka bootstrap servers move to bootstrap.servers",
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{
			Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 2},
			Kafka: &KafkaSpec{BootstrapServers: "kafka-0:9092,kafka-1:9092"},
		}},
		hub: v1.FlinkCluster{ObjectMeta: meta(), Spec: v1.FlinkClusterSpec{
			Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 2},
			Kafka: &v1.KafkaSpec{Bootstrap: v1.KafkaBootstrap{Servers: "kafka-0:9092,kafka-1:9092"}},
		}},
	},
	{
		name: "kafka with TLS and SASL references",
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{
			Version: "1.18.1", TaskManager: v1.TaskManagerSpec{Replicas: 1},
			Kafka: &KafkaSpec{
				BootstrapServers: "kafka:9093",
				TLS:              &v1.KafkaTLS{Enabled: true, SecretRef: &v1.SecretReference{Name: "kafka-tls"}},
				SASL:             &v1.KafkaSASL{SecretRef: v1.SecretReference{Name: "kafka-sasl"}},
			},
		}},
		hub: v1.FlinkCluster{ObjectMeta: meta(), Spec: v1.FlinkClusterSpec{
			Version: "1.18.1", TaskManager: v1.TaskManagerSpec{Replicas: 1},
			Kafka: &v1.KafkaSpec{
				Bootstrap: v1.KafkaBootstrap{Servers: "kafka:9093"},
				TLS:       &v1.KafkaTLS{Enabled: true, SecretRef: &v1.SecretReference{Name: "kafka-tls"}},
				SASL:      &v1.KafkaSASL{SecretRef: v1.SecretReference{Name: "kafka-sasl"}},
			},
		}},
	},
	{
		name:  "the reference example with a job, policies and status",
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: status()},
		hub:   v1.FlinkCluster{ObjectMeta: meta(), Spec: hubFull(), Status: status()},
	},
}

func alphaFull() FlinkClusterSpec {
	h := hubFull()
	return FlinkClusterSpec{
		Version: h.Version, Image: h.Image, ImagePullPolicy: h.ImagePullPolicy, ServiceAccountName: h.ServiceAccountName,
		JobManager: h.JobManager, TaskManager: h.TaskManager, HighAvailability: h.HighAvailability,
		Checkpointing: h.Checkpointing, Job: h.Job, UpgradePolicy: h.UpgradePolicy, Health: h.Health,
		FlinkConfiguration: h.FlinkConfiguration,
		Kafka:              &KafkaSpec{BootstrapServers: h.Kafka.Bootstrap.Servers, SASL: h.Kafka.SASL},
	}
}

func hubFull() v1.FlinkClusterSpec {
	limits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceCPU: resource.MustParse("4")}
	return v1.FlinkClusterSpec{
		Version: "1.17.1", Image: "registry.example.com/flink:1.17.1", ImagePullPolicy: corev1.PullAlways, ServiceAccountName: "flink",
		JobManager:         v1.JobManagerSpec{Replicas: 3, Resources: corev1.ResourceRequirements{Limits: limits}},
		TaskManager:        v1.TaskManagerSpec{Replicas: 12, Slots: 4, Storage: &v1.TaskManagerStorage{Size: resource.MustParse("50Gi")}},
		HighAvailability:   &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityZookeeper, Zookeeper: &v1.ZookeeperSpec{ConnectString: "zookeeper:2181"}},
		Checkpointing:      &v1.CheckpointingSpec{Interval: "30s", Retention: 3},
		Kafka:              &v1.KafkaSpec{Bootstrap: v1.KafkaBootstrap{Servers: "kafka:9092"}, SASL: &v1.KafkaSASL{SecretRef: v1.SecretReference{Name: "sasl"}}},
		Job:                &v1.JobSpec{JarURI: "https://jars.example.com/orders.jar", Parallelism: 8, UpgradeMode: v1.UpgradeSavepoint},
		UpgradePolicy:      &v1.UpgradePolicy{},
		Health:             &v1.HealthPolicy{},
		FlinkConfiguration: v1.FlinkConfiguration{"state.backend.type": "rocksdb"},
	}
}

func TestConvertTo(t *testing.T) {
	for _, tc := range pairs {
		t.Run(tc.name, func(t *testing.T) {
			got := &v1.FlinkCluster{}
			if err := tc.alpha.DeepCopy().ConvertTo(got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&tc.hub, got) {
				t.Errorf("v1alpha1 -> v1 (-want +got):\n%s", diff.Diff(&tc.hub, got))
			}
		})
	}
}

func TestConvertFrom(t *testing.T) {
	for _, tc := range pairs {
		t.Run(tc.name, func(t *testing.T) {
			got := &FlinkCluster{}
			if err := got.ConvertFrom(tc.hub.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&tc.alpha, got) {
				t.Errorf("v1 -> v1alpha1 (-want +got):\n%s", diff.Diff(&tc.alpha, got))
			}
		})
	}
}

// TestConversionDoesNotAlias: the converted object shares no memory with
// its source, so a controller mutating one cannot change the other.
func TestConversionDoesNotAlias(t *testing.T) {
	src := &FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: status()}
	hub := &v1.FlinkCluster{}
	if err := src.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	hub.Spec.Kafka.SASL.SecretRef.Name = "changed"
	hub.Spec.FlinkConfiguration["x"] = "y"
	hub.Labels["team"] = "changed"
	hub.Status.Conditions[0].Reason = "Changed"
	if want := (&FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: status()}); !reflect.DeepEqual(want, src) {
		t.Errorf("Changing the converted object changed its source (-want +got):\n%s", diff.Diff(want, src))
	}
}

// filler fills every exported field at random, including fields added after
// this test was written: a field that one direction drops fails the round
// trips below.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		// Quantities and raw JSON carry unexported state the filler cannot
		// set consistently; give them real values.
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(int64(c.Uint64()%1000), resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(int64(c.Uint64()%2000000000), 0) },
		func(r *runtime.RawExtension, c randfill.Continue) {
			*r = runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"version":"1.%d.0"}`, c.Uint64()%30))}
		},
	)
}

func TestRoundTripHubSpokeHub(t *testing.T) {
	for seed := range int64(500) {
		want := &v1.FlinkCluster{}
		filler(seed).Fill(want)
		spoke := &FlinkCluster{}
		if err := spoke.ConvertFrom(want.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		got := &v1.FlinkCluster{}
		if err := spoke.ConvertTo(got); err != nil {
			t.Fatal(err)
		}
		got.TypeMeta = want.TypeMeta // the webhook sets apiVersion and kind
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Seed %d: v1 -> v1alpha1 -> v1 lost data (-want +got):\n%s", seed, diff.Diff(want, got))
		}
	}
}

func TestRoundTripSpokeHubSpoke(t *testing.T) {
	for seed := range int64(500) {
		want := &FlinkCluster{}
		filler(seed).Fill(want)
		hub := &v1.FlinkCluster{}
		if err := want.DeepCopy().ConvertTo(hub); err != nil {
			t.Fatal(err)
		}
		got := &FlinkCluster{}
		if err := got.ConvertFrom(hub); err != nil {
			t.Fatal(err)
		}
		got.TypeMeta = want.TypeMeta
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Seed %d: v1alpha1 -> v1 -> v1alpha1 lost data (-want +got):\n%s", seed, diff.Diff(want, got))
		}
	}
}

// TestSpecFieldsMatch names the one intended difference between the specs;
// a field added to one version only must be handled in conversion.go (with
// an annotation if v1alpha1 cannot express it) before this test is updated.
func TestSpecFieldsMatch(t *testing.T) {
	fields := func(typ reflect.Type) []string {
		var out []string
		for f := range typ.Fields() {
			out = append(out, strings.Split(f.Tag.Get("json"), ",")[0]+" "+f.Type.String())
		}
		slices.Sort(out)
		return out
	}
	alpha := fields(reflect.TypeFor[FlinkClusterSpec]())
	hub := fields(reflect.TypeFor[v1.FlinkClusterSpec]())
	onlyAlpha := slices.DeleteFunc(slices.Clone(alpha), func(s string) bool { return slices.Contains(hub, s) })
	onlyHub := slices.DeleteFunc(slices.Clone(hub), func(s string) bool { return slices.Contains(alpha, s) })
	if !slices.Equal(onlyAlpha, []string{"kafka *v1alpha1.KafkaSpec"}) || !slices.Equal(onlyHub, []string{"kafka *v1.KafkaSpec"}) {
		t.Errorf("The specs differ beyond spec.kafka: only in v1alpha1 %v, only in v1 %v", onlyAlpha, onlyHub)
	}
	if got := fields(reflect.TypeFor[KafkaSpec]()); !slices.Equal(got, []string{"bootstrapServers string", "sasl *v1.KafkaSASL", "tls *v1.KafkaTLS"}) {
		t.Errorf("v1alpha1 KafkaSpec fields changed: %v", got)
	}
	if got := fields(reflect.TypeFor[v1.KafkaSpec]()); !slices.Equal(got, []string{"bootstrap v1.KafkaBootstrap", "sasl *v1.KafkaSASL", "tls *v1.KafkaTLS"}) {
		t.Errorf("v1 KafkaSpec fields changed: %v; convert the new ones in conversion.go", got)
	}
}
