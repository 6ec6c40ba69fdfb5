package resources

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/config/crd"
)

// templated is the reference example with a pod template per component,
// as a platform team writes one for a dedicated node pool: scheduling,
// metadata, environment, a volume, a sidecar and an init container; the
// JobManagers' spread required, the TaskManagers' switched off for a zone
// constraint of the template's own.
func templated(t *testing.T) *v1.FlinkCluster {
	fc := loadExample(t, "realtime-warehouse.yaml")
	fc.Name = "templated"
	fc.Spec.JobManager.Spread = v1.SpreadRequired
	fc.Spec.TaskManager.Spread = v1.SpreadNone
	pool := v1.PodTemplateSpec{
		NodeSelector:      map[string]string{"pool": "flink"},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "flink", Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "flink-critical",
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry"}},
	}
	jm := pool
	jm.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-1a", "eu-1b", "eu-1c"}}},
		}}},
	}}
	jm.Containers = []corev1.Container{
		// A sidecar first: the Flink container still comes first.
		{Name: "log-shipper", Image: "fluent/fluent-bit:3.0",
			VolumeMounts: []corev1.VolumeMount{{Name: volumeLog, MountPath: "/flink-log", ReadOnly: true}},
			Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
		{Name: "jobmanager",
			Env: []corev1.EnvVar{
				{Name: "TZ", Value: "Europe/Amsterdam"},
				// The operator's own variable: overridden.
				{Name: "POD_IP", Value: "10.0.0.1"},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "certs", MountPath: "/opt/flink/certs", ReadOnly: true},
				// On the configuration's mount path: overridden.
				{Name: "certs", MountPath: ConfDir},
			}},
	}
	jm.Volumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "flink-certs"}}}}
	fc.Spec.JobManager.PodTemplate = &v1.PodTemplate{
		Metadata: v1.PodTemplateMetadata{
			Labels:      map[string]string{"team": "data"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
		},
		Spec: jm,
	}
	tm := pool
	tm.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels("templated", ComponentTaskManager)},
	}}
	tm.SecurityContext = &corev1.PodSecurityContext{FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch)}
	tm.InitContainers = []corev1.Container{{Name: "fetch-udfs", Image: "busybox:1.36",
		Command:         []string{"sh", "-c", "wget -O /udfs/udfs.jar https://artifacts/udfs.jar"},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
		VolumeMounts:    []corev1.VolumeMount{{Name: "udfs", MountPath: "/udfs"}}}}
	tm.Containers = []corev1.Container{{Name: "taskmanager",
		// A second filesystem plugin: its directory is mounted too.
		Env:          []corev1.EnvVar{{Name: "ENABLE_BUILT_IN_PLUGINS", Value: "flink-s3-fs-hadoop-1.17.1.jar;flink-gs-fs-hadoop-1.17.1.jar"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "udfs", MountPath: "/opt/flink/usrlib"}}}}
	tm.Volumes = []corev1.Volume{{Name: "udfs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	fc.Spec.TaskManager.PodTemplate = &v1.PodTemplate{Spec: tm}
	return fc
}

// pods returns the JobManager and TaskManager pod templates of d as
// Kubernetes types.
func pods(t *testing.T, d *Desired) map[string]corev1.PodTemplateSpec {
	t.Helper()
	out := map[string]corev1.PodTemplateSpec{}
	for name, tmpl := range map[string]*coreac.PodTemplateSpecApplyConfiguration{
		ComponentJobManager:  d.JobManager.Spec.Template,
		ComponentTaskManager: d.TaskManager.Spec.Template,
	} {
		raw, err := json.Marshal(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		var p corev1.PodTemplateSpec
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

func build(t *testing.T, fc *v1.FlinkCluster, p Platform) *Desired {
	t.Helper()
	d, err := Build(fc, p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPodsAreRestricted evaluates every pod of every golden case with the
// checks of the restricted Pod Security Standard, as the API server's
// PodSecurity admission does in a namespace that enforces it.
func TestPodsAreRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range goldenCases(t) {
		for component, p := range pods(t, build(t, tc.fc, tc.platform)) {
			res := policy.AggregateCheckResults(eval.EvaluatePod(
				api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &p.ObjectMeta, &p.Spec))
			if !res.Allowed {
				t.Errorf("%s %s: refused by restricted: %s", name, component, res.ForbiddenDetail())
			}
		}
	}
}

// TestFlinkCanWrite holds the pods to what the official image writes when
// it starts with a read-only root filesystem as UID 9999: /tmp, the log
// directory and each enabled plugin's directory are volumes; the
// configuration is the ConfigMap (the entrypoint's edits of it fail, and
// it goes on).
func TestFlinkCanWrite(t *testing.T) {
	for name, tc := range goldenCases(t) {
		for component, p := range pods(t, build(t, tc.fc, tc.platform)) {
			c := p.Spec.Containers[0]
			if c.Name != component {
				t.Fatalf("%s %s: first container is %s", name, component, c.Name)
			}
			sc := c.SecurityContext
			if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
				t.Fatalf("%s %s: the root filesystem is writable; the test assumes it is not", name, component)
			}
			if ps := p.Spec.SecurityContext; ps == nil || ptr.Deref(ps.RunAsUser, 0) != FlinkUID || ptr.Deref(ps.FSGroup, 0) != FlinkUID {
				t.Errorf("%s %s: pod does not run as the image's flink user (%d) with its group on volumes", name, component, FlinkUID)
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = m.Name
			}
			writable := []string{TmpDir, LogDir, DataDir}
			for _, e := range c.Env {
				if e.Name == "ENABLE_BUILT_IN_PLUGINS" {
					for _, jar := range strings.Split(e.Value, ";") {
						writable = append(writable, PluginsDir+"/"+strings.TrimSuffix(jar, ".jar"))
					}
				}
			}
			for _, dir := range writable {
				v, ok := mounts[dir]
				if !ok {
					t.Errorf("%s %s: %s is not a volume; Flink writes there", name, component, dir)
					continue
				}
				if !writableVolume(p.Spec, v) {
					t.Errorf("%s %s: %s is volume %s, which is not writable", name, component, dir, v)
				}
			}
			if mounts[ConfDir] != volumeConfig {
				t.Errorf("%s %s: %s is %q, want the operator's configuration", name, component, ConfDir, mounts[ConfDir])
			}
			if _, ok := mounts[PluginsDir]; ok {
				t.Errorf("%s %s: a volume over %s hides the image's own plugins (metric reporters)", name, component, PluginsDir)
			}
		}
	}
}

func writableVolume(p corev1.PodSpec, name string) bool {
	for _, v := range p.Volumes {
		if v.Name == name {
			return v.EmptyDir != nil || v.PersistentVolumeClaim != nil
		}
	}
	// A volume claim template of the StatefulSet.
	return name == volumeData
}

func TestSpreadDefaults(t *testing.T) {
	ref := loadExample(t, "realtime-warehouse.yaml")
	for _, tc := range []struct {
		name           string
		mutate         func(*v1.FlinkCluster)
		jmRequired     bool
		jmPreferred    int // preferred anti-affinity terms
		tmWhen         corev1.UnsatisfiableConstraintAction
		noTopologyKeys bool
	}{
		{"default", func(*v1.FlinkCluster) {}, false, 2, corev1.ScheduleAnyway, false},
		{"required", func(fc *v1.FlinkCluster) {
			fc.Spec.JobManager.Spread, fc.Spec.TaskManager.Spread = v1.SpreadRequired, v1.SpreadRequired
		}, true, 1, corev1.DoNotSchedule, false},
		{"none", func(fc *v1.FlinkCluster) {
			fc.Spec.JobManager.Spread, fc.Spec.TaskManager.Spread = v1.SpreadNone, v1.SpreadNone
		}, false, 0, "", true},
		{"no HA: one JobManager, no anti-affinity", func(fc *v1.FlinkCluster) {
			fc.Spec.HighAvailability, fc.Spec.JobManager.Replicas = nil, 1
		}, false, 0, corev1.ScheduleAnyway, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := ref.DeepCopy()
			tc.mutate(fc)
			p := pods(t, build(t, fc, platformStorage))
			jm, tm := p[ComponentJobManager].Spec, p[ComponentTaskManager].Spec
			var required, preferred int
			if a := jm.Affinity; a != nil && a.PodAntiAffinity != nil {
				required = len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
				preferred = len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
				for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					if w.PodAffinityTerm.LabelSelector.MatchLabels[LabelComponent] != ComponentJobManager {
						t.Errorf("anti-affinity term selects %v", w.PodAffinityTerm.LabelSelector.MatchLabels)
					}
				}
			}
			if (required == 1) != tc.jmRequired || preferred != tc.jmPreferred {
				t.Errorf("JobManager anti-affinity: %d required, %d preferred terms; want required=%v, %d preferred", required, preferred, tc.jmRequired, tc.jmPreferred)
			}
			if tc.noTopologyKeys {
				if len(tm.TopologySpreadConstraints) != 0 {
					t.Errorf("TaskManager constraints %v, want none", tm.TopologySpreadConstraints)
				}
				return
			}
			if len(tm.TopologySpreadConstraints) != 1 {
				t.Fatalf("TaskManager constraints %v, want one", tm.TopologySpreadConstraints)
			}
			c := tm.TopologySpreadConstraints[0]
			if c.TopologyKey != corev1.LabelHostname || c.MaxSkew != 1 || c.WhenUnsatisfiable != tc.tmWhen || c.LabelSelector.MatchLabels[LabelComponent] != ComponentTaskManager {
				t.Errorf("TaskManager constraint %+v", c)
			}
		})
	}
}

// TestTemplateCannotTakeWhatTheOperatorOwns merges a template that sets
// every owned field (as an object that bypassed admission could) and
// checks that the operator's values stand.
func TestTemplateCannotTakeWhatTheOperatorOwns(t *testing.T) {
	ref := loadExample(t, "realtime-warehouse.yaml")
	plain := pods(t, build(t, ref, platformStorage))[ComponentTaskManager]

	fc := ref.DeepCopy()
	fc.Spec.TaskManager.PodTemplate = &v1.PodTemplate{
		Metadata: v1.PodTemplateMetadata{
			Labels:      map[string]string{LabelInstance: "other", LabelComponent: "jobmanager", "team": "data"},
			Annotations: map[string]string{AnnotationConfigHash: "stale"},
		},
		Spec: v1.PodTemplateSpec{
			Containers: []corev1.Container{{
				Name: "taskmanager", Image: "evil:latest", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep"}, Args: []string{"infinity"},
				Ports:          []corev1.ContainerPort{{Name: "rpc", ContainerPort: 1}},
				ReadinessProbe: &corev1.Probe{InitialDelaySeconds: 999},
				StartupProbe:   &corev1.Probe{InitialDelaySeconds: 999},
				Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}},
				Env:            []corev1.EnvVar{{Name: "POD_IP", Value: "1.2.3.4"}, {Name: "EXTRA", Value: "yes"}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "mine", MountPath: ConfDir}, {Name: "mine", MountPath: "/mine"}},
			}},
			Volumes: []corev1.Volume{
				{Name: volumeConfig, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	got := pods(t, build(t, fc, platformStorage))[ComponentTaskManager]
	for k, v := range plain.Labels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want the operator's %q", k, got.Labels[k], v)
		}
	}
	if got.Labels["team"] != "data" {
		t.Error("the template's own label is missing")
	}
	if got.Annotations[AnnotationConfigHash] != plain.Annotations[AnnotationConfigHash] {
		t.Error("the template replaced the config hash")
	}
	want, c := plain.Spec.Containers[0], got.Spec.Containers[0]
	for field, same := range map[string]bool{
		"image":           c.Image == want.Image && c.ImagePullPolicy == want.ImagePullPolicy,
		"command, args":   slices.Equal(c.Command, want.Command) && slices.Equal(c.Args, want.Args),
		"ports":           len(c.Ports) == len(want.Ports) && c.Ports[0] == want.Ports[0],
		"probes":          c.StartupProbe == nil && c.ReadinessProbe.InitialDelaySeconds == want.ReadinessProbe.InitialDelaySeconds,
		"resources":       c.Resources.Limits.Memory().Equal(*want.Resources.Limits.Memory()),
		"POD_IP":          env(c, "POD_IP").ValueFrom != nil && env(c, "POD_IP").Value == "",
		"config mount":    mount(c, ConfDir) == volumeConfig,
		"config volume":   volume(got.Spec, volumeConfig).ConfigMap != nil,
		"template env":    env(c, "EXTRA").Value == "yes",
		"template mount":  mount(c, "/mine") == "mine",
		"template volume": volume(got.Spec, "mine").EmptyDir != nil,
	} {
		if !same {
			t.Errorf("%s: the merge did not keep what it should", field)
		}
	}
}

func env(c corev1.Container, name string) corev1.EnvVar {
	for _, e := range c.Env {
		if e.Name == name {
			return e
		}
	}
	return corev1.EnvVar{}
}

func mount(c corev1.Container, path string) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m.Name
		}
	}
	return ""
}

func volume(p corev1.PodSpec, name string) corev1.Volume {
	for _, v := range p.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{}
}

// TestTemplateChangeRollsThePods: a template change changes the pod
// template (so the workload rolls) and nothing of the configuration.
func TestTemplateChangeRollsThePods(t *testing.T) {
	ref := loadExample(t, "realtime-warehouse.yaml")
	before := build(t, ref, platformStorage)
	fc := ref.DeepCopy()
	fc.Spec.TaskManager.PodTemplate = &v1.PodTemplate{Spec: v1.PodTemplateSpec{NodeSelector: map[string]string{"pool": "flink"}}}
	after := build(t, fc, platformStorage)
	if before.TaskManager.Annotations[AnnotationSpecHash] == after.TaskManager.Annotations[AnnotationSpecHash] {
		t.Error("a template change left the StatefulSet's spec hash alone: it would never be applied")
	}
	if before.JobManager.Annotations[AnnotationSpecHash] != after.JobManager.Annotations[AnnotationSpecHash] {
		t.Error("a TaskManager template changed the JobManager")
	}
	if before.Config.Hash != after.Config.Hash {
		t.Error("a template changed the Flink configuration")
	}
	again := build(t, fc, platformStorage)
	if again.TaskManager.Annotations[AnnotationSpecHash] != after.TaskManager.Annotations[AnnotationSpecHash] {
		t.Error("the same template built twice differs")
	}
}

// TestReservedVolumeNamesMatchTheCRD holds the volume names the CRD
// refuses in a pod template to the volumes the builder mounts, in every
// shape of cluster the goldens cover.
func TestReservedVolumeNamesMatchTheCRD(t *testing.T) {
	cases := goldenCases(t)
	user := map[string]bool{}
	for _, tmpl := range []*v1.PodTemplate{cases["templated"].fc.Spec.JobManager.PodTemplate, cases["templated"].fc.Spec.TaskManager.PodTemplate} {
		for _, v := range tmpl.Spec.Volumes {
			user[v.Name] = true
		}
	}
	for name, tc := range cases {
		for _, p := range pods(t, build(t, tc.fc, tc.platform)) {
			for _, v := range p.Spec.Volumes {
				if !user[v.Name] && !slices.Contains(ReservedVolumeNames, v.Name) {
					t.Errorf("%s: the operator mounts volume %s, which ReservedVolumeNames lacks", name, v.Name)
				}
			}
		}
	}

	raw, err := crd.Bases.ReadFile("bases/data.example.com_flinkclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	const start = "self.all(v, !(v.name in ["
	var reserved []string
	for _, r := range def.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["taskManager"].
		Properties["podTemplate"].Properties["spec"].Properties["volumes"].XValidations {
		if list, ok := strings.CutPrefix(r.Rule, start); ok {
			for _, q := range strings.Split(strings.TrimSuffix(list, "]))"), ",") {
				reserved = append(reserved, strings.Trim(strings.TrimSpace(q), "'"))
			}
		}
	}
	if !slices.Equal(reserved, ReservedVolumeNames) {
		t.Errorf("the CRD refuses volumes %v, the operator reserves %v", reserved, ReservedVolumeNames)
	}
}
