package resources

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
	"github.com/datapilot/datapilot/internal/flinkconf/flinkoptions"
)

// supportedVersions are the Flink releases the rendering is checked against,
// one per minor held in flinkoptions.
var supportedVersions = []string{"1.17.2", "1.18.1", "1.19.3", "1.20.1", "2.0.1", "2.1.1", "2.2.0"}

// refFixture is a cluster and the platform it is rendered on.
type refFixture struct {
	fc       *v1.FlinkCluster
	platform Platform
}

// flinkRefFixtures are the clusters rendered for every supported version:
// a minimal session cluster on a platform with shared storage; a full one
// (ZooKeeper HA, checkpointing with retention and its own directories,
// Kafka with TLS and SASL, a last-state job, extra settings); and one with
// Kubernetes HA on its own shared claim.
func flinkRefFixtures(version string) map[string]refFixture {
	session := &v1.FlinkCluster{}
	session.Name, session.Namespace, session.UID = "sessions", "default", "00000000-0000-0000-0000-000000000003"
	session.Spec = v1.FlinkClusterSpec{
		Version:     version,
		JobManager:  v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
	}

	full := session.DeepCopy()
	full.Name = "payments"
	full.Spec.JobManager = v1.JobManagerSpec{Replicas: 3, Resources: limits("4Gi", "2")}
	full.Spec.TaskManager = v1.TaskManagerSpec{Replicas: 6, Slots: 4, Resources: limits("16Gi", "4")}
	full.Spec.HighAvailability = &v1.HighAvailabilitySpec{
		Mode:       v1.HighAvailabilityZookeeper,
		Zookeeper:  &v1.ZookeeperSpec{ConnectString: "zk-0.zk:2181,zk-1.zk:2181,zk-2.zk:2181/flink"},
		StorageDir: "s3://flink/ha",
	}
	full.Spec.Checkpointing = &v1.CheckpointingSpec{
		Interval:       "30s",
		Retention:      5,
		CheckpointsDir: "s3://flink/checkpoints",
		SavepointsDir:  "s3://flink/savepoints",
	}
	full.Spec.Kafka = &v1.KafkaSpec{
		Bootstrap: v1.KafkaBootstrap{Servers: "kafka-0:9093,kafka-1:9093"},
		TLS:       &v1.KafkaTLS{Enabled: true, SecretRef: &v1.SecretReference{Name: "kafka-tls"}},
		SASL:      &v1.KafkaSASL{SecretRef: v1.SecretReference{Name: "kafka-sasl"}},
	}
	full.Spec.Job = &v1.JobSpec{
		JarURI:      "https://artifacts.example.com/payments.jar",
		EntryClass:  "com.example.Payments",
		Parallelism: 16,
		UpgradeMode: v1.UpgradeLastState,
	}
	full.Spec.FlinkConfiguration = v1.FlinkConfiguration{
		"pipeline.name":                         "payments: enrich & route",
		"state.backend.type":                    "rocksdb",
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "10",
		"taskmanager.memory.managed.fraction":   "0.5",
	}

	k8sHA := session.DeepCopy()
	k8sHA.Name = "k8s-ha"
	k8sHA.Spec.JobManager.Replicas = 2
	k8sHA.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	k8sHA.Spec.Storage = &v1.StorageSpec{ClaimName: "flink-shared"}
	k8sHA.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "1m"}

	return map[string]refFixture{
		"session":       {session, platformStorage},
		"full":          {full, Platform{}},
		"kubernetes-ha": {k8sHA, Platform{}},
	}
}

func limits(memory, cpu string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourceCPU:    resource.MustParse(cpu),
	}}
}

// minorOf loads the option tables of a version's minor.
func minorOf(t *testing.T, version string) *flinkoptions.Minor {
	t.Helper()
	v, err := flink.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flinkoptions.Load(v.Line().String())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEverySupportedMinorIsChecked: the versions checked here are one per
// supported minor, and each has Flink's tables in flinkoptions, so a minor
// added to the support matrix cannot go unchecked.
func TestEverySupportedMinorIsChecked(t *testing.T) {
	var checked, supported []string
	for _, version := range supportedVersions {
		v, err := flink.ParseVersion(version)
		if err != nil {
			t.Fatal(err)
		}
		checked = append(checked, v.Line().String())
	}
	for _, m := range flink.SupportedMinors {
		supported = append(supported, m.String())
	}
	if !slices.Equal(checked, supported) {
		t.Errorf("checked minors %v, supported %v", checked, supported)
	}
	if !slices.Equal(checked, flinkoptions.Minors) {
		t.Errorf("checked minors %v, Flink's tables held for %v", checked, flinkoptions.Minors)
	}
}

// TestRenderedKeysAreFlinkOptions: every key rendered for a version is an
// option of its minor. Flink 1.x still reads deprecated and fallback keys
// (ConfigOption#withDeprecatedKeys, #withFallbackKeys), so there they pass;
// 2.x must get the current key. A key that is an option and also another
// option's fallback (jobmanager.rpc.address for rest.address) is current.
func TestRenderedKeysAreFlinkOptions(t *testing.T) {
	for _, version := range supportedVersions {
		m := minorOf(t, version)
		for name, f := range flinkRefFixtures(version) {
			t.Run(version+"/"+name, func(t *testing.T) {
				cfg, err := RenderConfig(f.fc, f.platform)
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range slices.Sorted(maps.Keys(cfg.Settings)) {
					_, option := m.Options[key]
					var deprecatedFor []flinkoptions.Alias
					for _, a := range m.Aliases[key] {
						if !a.Fallback {
							deprecatedFor = append(deprecatedFor, a)
						}
					}
					switch {
					case option && len(deprecatedFor) == 0:
					case strings.HasPrefix(version, "1.") && (option || len(m.Aliases[key]) > 0):
					case len(m.Aliases[key]) > 0:
						t.Errorf("%s is an old key in Flink %s, read only for %s: write that", key, m.Name, aliasNames(m.Aliases[key]))
					default:
						t.Errorf("%s is no option of Flink %s", key, m.Name)
					}
				}
			})
		}
	}
}

func aliasNames(as []flinkoptions.Alias) string {
	var names []string
	for _, a := range as {
		names = append(names, a.Option)
	}
	return strings.Join(names, " or ")
}

// TestRenderedFileReadsBackAsSettings parses the rendered ConfigMap file
// with the parser of the version's minor: Flink must read exactly Settings.
func TestRenderedFileReadsBackAsSettings(t *testing.T) {
	for _, version := range supportedVersions {
		m := minorOf(t, version)
		for name, f := range flinkRefFixtures(version) {
			t.Run(version+"/"+name, func(t *testing.T) {
				cfg, err := RenderConfig(f.fc, f.platform)
				if err != nil {
					t.Fatal(err)
				}
				// The ConfigMap replaces conf/, so the file must be the
				// one this minor's distribution ships and reads.
				if cfg.FileName != m.DefaultConfName {
					t.Errorf("rendered %s, Flink %s reads %s", cfg.FileName, m.Name, m.DefaultConfName)
				}
				got, err := flinkconf.Parse(cfg.FileName, []byte(cfg.Files()[cfg.FileName]))
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range slices.Sorted(maps.Keys(cfg.Settings)) {
					if g, ok := got[key]; !ok {
						t.Errorf("%s = %q is not read at all", key, cfg.Settings[key])
					} else if g != cfg.Settings[key] {
						t.Errorf("%s = %q reads as %q", key, cfg.Settings[key], g)
					}
				}
				for key := range got {
					if _, ok := cfg.Settings[key]; !ok {
						t.Errorf("%s = %q is read but was not set", key, got[key])
					}
				}
			})
		}
	}
}

// TestFlinkConfigGolden compares the ConfigMap data of every fixture and
// version with testdata/golden/<fixture>-<version>.yaml.
func TestFlinkConfigGolden(t *testing.T) {
	for _, version := range supportedVersions {
		for name, f := range flinkRefFixtures(version) {
			t.Run(version+"/"+name, func(t *testing.T) {
				d, err := Build(f.fc, f.platform)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := yaml.Marshal(d.ConfigMap.Data)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", name+"-"+version+".yaml"), raw)
			})
		}
	}
}

// TestAwkwardValuesRoundTrip renders user values that YAML or Flink's line
// parser could take for something else and reads them back as Flink does.
// config.yaml must carry every string. flink-conf.yaml cannot carry an empty
// value, a '#', a line break, or a leading or trailing character up to
// U+0020 (flinkconf.LegacyCarries); admission has to refuse exactly those,
// and rendering refuses them too, for objects that bypassed admission.
func TestAwkwardValuesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		value string
		// legacy is whether flink-conf.yaml carries the value.
		legacy bool
	}{
		{"null", true},
		{"Null", true},
		{"~", true},
		{"1.20", true},
		{"010", true},
		{"1e5", true},
		{"-0", true},
		{".inf", true},
		{"+.inf", true},
		{"true", true},
		{"True", true},
		{"yes", true},
		{"0x10", true},
		{"0o17", true},
		{"a: b", true},
		{"a:b", true},
		{"[a, b]", true},
		{"{a: b}", true},
		{"'q'", true},
		{`"dq"`, true},
		{`quote " inside`, true},
		{"it's", true},
		{`back\slash`, true},
		{"*x", true},
		{"&x", true},
		{"!x", true},
		{"!!str x", true},
		{"%x", true},
		{"@x", true},
		{"`x`", true},
		{"-", true},
		{"- x", true},
		{"? x", true},
		{": x", true},
		{"---", true},
		{"...", true},
		{"${HOME}", true},
		{"|", true},
		{">", true},
		{"žluťoučký kůň 🐎", true},
		{"inner\ttab", true},
		{"inner\x01control", true},
		{"\u00a0nbsp-led", true},
		{"x\u2028y", true},
		{"x\u0085y", true},
		{"\ufeffbom", true},
		{strings.Repeat("long-", 819), true},
		// What flink-conf.yaml cannot carry.
		{"", false},
		{"#x", false},
		{"x # y", false},
		{"pass#word", false},
		{"trailing ", false},
		{" leading", false},
		{"\ttab-led", false},
		{"tab-ended\t", false},
		{"\x01control-led", false},
		{"line\nbreak", false},
		{"carriage\rreturn", false},
		{"x\nrest.port: 1", false},
	} {
		for _, version := range supportedVersions {
			f := flinkRefFixtures(version)["session"]
			f.fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": v1.ConfigValue(tc.value)}
			cfg, err := RenderConfig(f.fc, f.platform)
			rule := flinkconf.LegacyCarries("pipeline.name", tc.value)
			if err != nil {
				// Rendering refuses what flink-conf.yaml cannot carry,
				// and only that.
				if !legacyFile(t, version) || tc.legacy || rule == nil {
					t.Errorf("%s: %q: %v", version, tc.value, err)
				}
				continue
			}
			got, err := flinkconf.Parse(cfg.FileName, []byte(cfg.Files()[cfg.FileName]))
			if err != nil {
				t.Errorf("%s: %q: the rendered %s does not parse: %v", version, tc.value, cfg.FileName, err)
				continue
			}
			v, read := got["pipeline.name"]
			carried := read && v == tc.value
			if cfg.FileName == flinkconf.YAMLFileName {
				if !carried {
					t.Errorf("%s: %q reads back as %q (read: %v)", version, tc.value, v, read)
				}
				continue
			}
			if !carried || !tc.legacy || rule != nil {
				t.Errorf("%s: %q rendered and reads back as %q (read: %v); want it refused (legacy=%v, LegacyCarries: %v)", version, tc.value, v, read, tc.legacy, rule)
			}
		}
	}
}

// legacyFile says whether the version reads flink-conf.yaml.
func legacyFile(t *testing.T, version string) bool {
	t.Helper()
	ver, err := flink.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return !flink.KeysFor(ver).YAML
}

// TestOwnedKeysCoverRenderingAndAliases: every key the operator renders,
// and every deprecated or fallback key the minor still reads in its place,
// is in flink.OwnedKeys, which the admission rule refuses. Otherwise a user
// setting would be silently overwritten, or read by Flink instead.
func TestOwnedKeysCoverRenderingAndAliases(t *testing.T) {
	for _, version := range supportedVersions {
		m := minorOf(t, version)
		readInstead := map[string][]string{} // option -> keys read in its place
		for old, as := range m.Aliases {
			for _, a := range as {
				readInstead[a.Option] = append(readInstead[a.Option], old)
			}
		}
		for name, f := range flinkRefFixtures(version) {
			cfg, err := RenderConfig(f.fc, f.platform)
			if err != nil {
				t.Fatal(err)
			}
			for key := range cfg.Settings {
				if _, user := f.fc.Spec.FlinkConfiguration[key]; user || key == flink.LastStateRetentionKey {
					continue // the retention key is owned with last-state only, by its own rule
				}
				if !flink.Owned(key) {
					t.Errorf("%s/%s: rendering writes %s, which admission does not refuse", version, name, key)
				}
				for _, old := range readInstead[key] {
					if !flink.Owned(old) {
						t.Errorf("%s/%s: Flink %s reads %s in place of the rendered %s, and admission does not refuse it", version, name, m.Name, old, key)
					}
				}
			}
		}
	}
}
