package v1alpha1

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
		Conditions:   []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "AllReady", ObservedGeneration: 3}},
		TaskManager:  v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2, Ready: "2/2"},
		Selector:     "app=orders",
		DeployedSpec: &runtime.RawExtension{Raw: []byte(`{"version":"1.17.1","taskManager":{"replicas":2}}`)},
	}
}

func alphaStatus() FlinkClusterStatus {
	return FlinkClusterStatus{
		ObservedGeneration: 3, Phase: "Running",
		Conditions:   []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "AllReady", ObservedGeneration: 3}},
		TaskManager:  ComponentStatus{Replicas: 2, ReadyReplicas: 2, Ready: "2/2"},
		Selector:     "app=orders",
		DeployedSpec: &runtime.RawExtension{Raw: []byte(`{"version":"1.17.1","taskManager":{"replicas":2}}`)},
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
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{Version: "1.17.1", TaskManager: TaskManagerSpec{Replicas: 2}}},
		hub:   v1.FlinkCluster{ObjectMeta: meta(), Spec: v1.FlinkClusterSpec{Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 2}}},
	},
	{
		name: "kafka bootstrap servers move to bootstrap.servers",
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{
			Version: "1.17.1", TaskManager: TaskManagerSpec{Replicas: 2},
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
			Version: "1.18.1", TaskManager: TaskManagerSpec{Replicas: 1},
			Kafka: &KafkaSpec{
				BootstrapServers: "kafka:9093",
				TLS:              &KafkaTLS{Enabled: true, SecretRef: &SecretReference{Name: "kafka-tls"}},
				SASL:             &KafkaSASL{SecretRef: SecretReference{Name: "kafka-sasl"}},
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
		alpha: FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: alphaStatus()},
		hub:   v1.FlinkCluster{ObjectMeta: meta(), Spec: hubFull(), Status: status()},
	},
}

func alphaFull() FlinkClusterSpec {
	limits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceCPU: resource.MustParse("4")}
	return FlinkClusterSpec{
		Version: "1.17.1", Image: "registry.example.com/flink:1.17.1", ImagePullPolicy: corev1.PullAlways, ServiceAccountName: "flink",
		JobManager:         JobManagerSpec{Replicas: 3, Resources: corev1.ResourceRequirements{Limits: limits}},
		TaskManager:        TaskManagerSpec{Replicas: 12, Slots: 4, Storage: &TaskManagerStorage{Size: resource.MustParse("50Gi")}},
		HighAvailability:   &HighAvailabilitySpec{Mode: "zookeeper", Zookeeper: &ZookeeperSpec{ConnectString: "zookeeper:2181"}},
		Checkpointing:      &CheckpointingSpec{Interval: "30s", Retention: 3},
		Kafka:              &KafkaSpec{BootstrapServers: "kafka:9092", SASL: &KafkaSASL{SecretRef: SecretReference{Name: "sasl"}}},
		Job:                &JobSpec{JarURI: "https://jars.example.com/orders.jar", Parallelism: 8, UpgradeMode: "savepoint"},
		UpgradePolicy:      &UpgradePolicy{},
		Health:             &HealthPolicy{},
		FlinkConfiguration: FlinkConfiguration{"state.backend.type": "rocksdb"},
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
			if !equality.Semantic.DeepEqual(&tc.hub, got) {
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
			if !equality.Semantic.DeepEqual(&tc.alpha, got) {
				t.Errorf("v1 -> v1alpha1 (-want +got):\n%s", diff.Diff(&tc.alpha, got))
			}
		})
	}
}

// TestConversionDoesNotAlias: the converted object shares no memory with
// its source, so a controller mutating one cannot change the other.
func TestConversionDoesNotAlias(t *testing.T) {
	src := &FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: alphaStatus()}
	hub := &v1.FlinkCluster{}
	if err := src.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	hub.Spec.Kafka.SASL.SecretRef.Name = "changed"
	hub.Spec.FlinkConfiguration["x"] = "y"
	hub.Labels["team"] = "changed"
	hub.Status.Conditions[0].Reason = "Changed"
	if want := (&FlinkCluster{ObjectMeta: meta(), Spec: alphaFull(), Status: alphaStatus()}); !reflect.DeepEqual(want, src) {
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
		func(f *metav1.FieldsV1, c randfill.Continue) {
			*f = metav1.FieldsV1{Raw: []byte(fmt.Sprintf(`{"f:spec":{"f:n%d":{}}}`, c.Uint64()%10))}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			*r = runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"version":"1.%d.0"}`, c.Uint64()%30))}
		},
	)
}

func TestRoundTripHubSpokeHub(t *testing.T) {
	for seed := range int64(100) {
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
		// Compared as JSON, the only form the API server and the webhook
		// exchange: an empty list and no list are the same there.
		if !sameJSON(t, want, got) {
			t.Fatalf("Seed %d: v1 -> v1alpha1 -> v1 lost data (-want +got):\n%s", seed, diff.Diff(want, got))
		}
	}
}

func TestRoundTripSpokeHubSpoke(t *testing.T) {
	for seed := range int64(100) {
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
		if !sameJSON(t, want, got) {
			t.Fatalf("Seed %d: v1alpha1 -> v1 -> v1alpha1 lost data (-want +got):\n%s", seed, diff.Diff(want, got))
		}
	}
}

// TestV1KeepsEveryV1alpha1Field walks both types by JSON name: every path
// of v1alpha1 must exist in v1 (spec.kafka.bootstrapServers as
// spec.kafka.bootstrap.servers), since the conversion maps them by name.
// Paths only v1 has are fine: the annotation carries them.
func TestV1KeepsEveryV1alpha1Field(t *testing.T) {
	alpha := map[string]bool{}
	jsonPaths(reflect.TypeFor[FlinkCluster](), "", alpha, map[reflect.Type]bool{})
	hub := map[string]bool{}
	jsonPaths(reflect.TypeFor[v1.FlinkCluster](), "", hub, map[reflect.Type]bool{})
	renamed := map[string]string{".spec.kafka.bootstrapServers": ".spec.kafka.bootstrap.servers"}
	if len(alpha) < 50 {
		t.Fatalf("Found only %d v1alpha1 paths; the walk is broken", len(alpha))
	}
	for p := range alpha {
		if r, ok := renamed[p]; ok {
			p = r
		}
		if !hub[p] {
			t.Errorf("v1alpha1 has %s but v1 does not: convert it explicitly in conversion.go", p)
		}
	}
}

// jsonPaths adds the JSON path of every field below typ, down to the Kubernetes
// types (which both versions share and which end the walk).
func jsonPaths(typ reflect.Type, prefix string, out map[string]bool, seen map[reflect.Type]bool) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || seen[typ] || !strings.HasPrefix(typ.PkgPath(), "github.com/datapilot/") {
		return
	}
	seen[typ] = true
	defer delete(seen, typ)
	for f := range typ.Fields() {
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" {
			continue
		}
		path := prefix
		if name != "" {
			path = prefix + "." + name
			out[path] = true
		}
		jsonPaths(f.Type, path, out, seen)
	}
}

// TestV1OnlyFieldsAreCarried exercises the annotation with fields v1alpha1
// has no place for, as a v1 field added after the freeze (issue 11's
// spec.autoscaler, say) would be: kept on the way down, restored on the way
// up, and an edit through v1alpha1 of a value both versions have wins over
// the kept copy.
func TestV1OnlyFieldsAreCarried(t *testing.T) {
	hub := map[string]any{
		"spec": map[string]any{
			"version":    "2.1.0",
			"autoscaler": map[string]any{"enabled": true, "maxReplicas": json.Number("20")},
			"kafka":      map[string]any{"bootstrap": map[string]any{"servers": "k:9092", "protocol": "SASL_SSL"}},
			"jobManager": map[string]any{"replicas": json.Number("1")},
			"items":      []any{map[string]any{"name": "a", "newField": "x"}},
		},
		"status": map[string]any{"autoscaler": map[string]any{"lastScale": "2026-01-01T00:00:00Z"}},
	}
	// What v1alpha1 holds of it, back in v1 names: no autoscaler, no
	// kafka protocol, the list without its items' new field.
	back := map[string]any{
		"spec": map[string]any{
			"version":    "2.1.0",
			"kafka":      map[string]any{"bootstrap": map[string]any{"servers": "k:9092"}},
			"jobManager": map[string]any{"replicas": json.Number("1")},
			"items":      []any{map[string]any{"name": "a"}},
		},
		"status": map[string]any{},
	}
	fields, replaced := map[string]any{}, map[string]any{}
	lost(hub, back, fields, replaced)
	wantFields := map[string]any{
		"spec": map[string]any{
			"autoscaler": hub["spec"].(map[string]any)["autoscaler"],
			"kafka":      map[string]any{"bootstrap": map[string]any{"protocol": "SASL_SSL"}},
			"items":      hub["spec"].(map[string]any)["items"],
		},
		"status": hub["status"],
	}
	if !reflect.DeepEqual(fields, wantFields) {
		t.Fatalf("Kept fields:\n%v\nwant\n%v", fields, wantFields)
	}

	up := deepCopyJSON(t, back)
	restore(up, fields, replaced)
	if !reflect.DeepEqual(up, hub) {
		t.Errorf("Restored object:\n%v\nwant the hub\n%v", up, hub)
	}

	// An edit through v1alpha1 of the list wins; the autoscaler is still restored.
	edited := deepCopyJSON(t, back)
	edited["spec"].(map[string]any)["items"] = []any{map[string]any{"name": "b"}}
	restore(edited, fields, replaced)
	spec := edited["spec"].(map[string]any)
	if got := spec["items"]; !reflect.DeepEqual(got, []any{map[string]any{"name": "b"}}) {
		t.Errorf("The v1alpha1 edit of items was overwritten by the kept copy: %v", got)
	}
	if spec["autoscaler"] == nil {
		t.Errorf("spec.autoscaler was not restored after an unrelated edit")
	}
}

// TestAnnotationStaysOffV1: the carrier annotation is v1alpha1's alone; a
// v1 object never shows it, even one that somehow carried it.
func TestAnnotationStaysOffV1(t *testing.T) {
	hubObj := &v1.FlinkCluster{ObjectMeta: meta(), Spec: hubFull()}
	hubObj.Annotations[FieldsAnnotation] = `{"fields":{"spec":{"bogus":1}}}`
	spoke := &FlinkCluster{}
	if err := spoke.ConvertFrom(hubObj); err != nil {
		t.Fatal(err)
	}
	if _, ok := spoke.Annotations[FieldsAnnotation]; ok {
		t.Errorf("v1alpha1 object carries %s although v1alpha1 expresses the whole object: %v", FieldsAnnotation, spoke.Annotations)
	}
	back := &v1.FlinkCluster{}
	if err := spoke.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Annotations[FieldsAnnotation]; ok {
		t.Errorf("v1 object carries %s", FieldsAnnotation)
	}
	// A carried field v1 does not know is refused, not dropped.
	spoke.Annotations[FieldsAnnotation] = `{"fields":{"spec":{"bogus":1}}}`
	if err := spoke.ConvertTo(&v1.FlinkCluster{}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("ConvertTo with an unknown carried field: err = %v, want it named", err)
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func deepCopyJSON(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	out, err := toMap(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCarriedSpecRefusesControlCharacters: the annotation is a string the
// v1alpha1 schema does not look into, so a v1 value restored from it with a
// line break (which on flink-conf.yaml would set other keys) fails the
// conversion, naming the path; the same value without it converts.
func TestCarriedSpecRefusesControlCharacters(t *testing.T) {
	for _, tc := range []struct {
		name, fields, wantErr string
	}{
		{"newline in a carried string", `{"spec":{"highAvailability":{"storageDir":"s3://b/ha\nrest.port: 1"}}}`, "spec.highAvailability.storageDir must not contain a control character"},
		{"escape in a list", `{"spec":{"job":{"args":["ok","a\u001bb"]}}}`, "spec.job.args[1] must not contain a control character"},
		{"DEL in a key", `{"spec":{"flinkConfiguration":{"a.b\u007f":"x"}}}`, "spec.flinkConfiguration key must not contain a control character"},
		{"clean value", `{"spec":{"highAvailability":{"storageDir":"s3://b/ha"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoke := &FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{Version: "1.17.1"}}
			spoke.Annotations = map[string]string{FieldsAnnotation: `{"fields":` + tc.fields + `}`}
			hub := &v1.FlinkCluster{}
			err := spoke.ConvertTo(hub)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ConvertTo: %v", err)
			case tc.wantErr == "" && (hub.Spec.HighAvailability == nil || hub.Spec.HighAvailability.StorageDir != "s3://b/ha"):
				t.Fatalf("the clean carried value was not restored: %+v", hub.Spec.HighAvailability)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ConvertTo = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestConversionRefusesControlCharacters: v1alpha1's frozen schema lacks
// v1's patterns, so a control character in a string that reaches a
// rendered file fails the conversion, naming the v1alpha1 field; program
// arguments and pod templates, which reach no file, convert.
func TestConversionRefusesControlCharacters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*FlinkClusterSpec)
		wantErr string
	}{
		{"ZooKeeper quorum", func(s *FlinkClusterSpec) {
			s.HighAvailability = &HighAvailabilitySpec{Mode: "zookeeper", Zookeeper: &ZookeeperSpec{ConnectString: "zk:2181\nrest.port: 1"}}
		}, "spec.highAvailability.zookeeper.connectString must not contain a control character"},
		{"Kafka servers", func(s *FlinkClusterSpec) {
			s.Kafka = &KafkaSpec{BootstrapServers: "k:9092\r"}
		}, "spec.kafka.bootstrapServers must not contain a control character"},
		{"program arguments", func(s *FlinkClusterSpec) {
			s.Job = &JobSpec{JarURI: "https://a.example/j.jar", Args: []string{"line\nbreak"}}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoke := &FlinkCluster{ObjectMeta: meta(), Spec: FlinkClusterSpec{Version: "1.17.1"}}
			tc.mutate(&spoke.Spec)
			err := spoke.ConvertTo(&v1.FlinkCluster{})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("ConvertTo = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
