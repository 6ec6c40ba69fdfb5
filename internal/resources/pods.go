package resources

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// FlinkUID is the user and group the official image runs Flink as: its
// Dockerfile creates the flink group and user with ID 9999 and gives them
// /opt/flink (chown -R flink:flink). Its entrypoint steps down to that user
// with gosu only when it starts as root; started as 9999 it runs as is.
const FlinkUID int64 = 9999

// Directories Flink writes to, each an emptyDir under a read-only root
// filesystem.
const (
	// TmpDir is java.io.tmpdir, the default of io.tmp.dirs (spill files,
	// RocksDB, the blob store, the process working directory), web.tmpdir
	// and so web.upload.dir (the JobManager creates its upload directory at
	// start and fails without it), and env.pid.dir (the start script's pid
	// file).
	TmpDir = "/tmp"
	// LogDir is env.log.dir, where the start scripts point log.file.
	LogDir = FlinkHome + "/log"
	// PluginsDir is where the entrypoint links each ENABLE_BUILT_IN_PLUGINS
	// jar from opt/ (mkdir -p plugins/<jar name>; ln -fs). The image's own
	// plugins (the metric reporters) are in it too, so only the enabled
	// plugins' directories are mounted, each a subPath of one emptyDir.
	PluginsDir = FlinkHome + "/plugins"
)

// The operator's volumes. The simulator reads data, shared and
// flink-config from the pods; a pod template may not reuse any name.
const (
	volumeConfig    = "flink-config"
	volumeData      = "data"
	volumeShared    = "shared"
	volumeKafkaTLS  = "kafka-tls"
	volumeKafkaSASL = "kafka-sasl"
	volumeTmp       = "flink-tmp"
	volumeLog       = "flink-log"
	volumePlugins   = "flink-plugins"
)

// ReservedVolumeNames are the volumes the operator may mount, which the
// CRD refuses in spec.*.podTemplate.spec.volumes (a test holds the two to
// the same list).
var ReservedVolumeNames = []string{volumeConfig, volumeData, volumeShared, volumeKafkaTLS, volumeKafkaSASL, volumeTmp, volumeLog, volumePlugins}

// podSecurityContext meets the restricted Pod Security Standard for the
// whole pod: non-root as the image's flink user, RuntimeDefault seccomp.
// fsGroup makes mounted volumes writable for that user.
func podSecurityContext() *coreac.PodSecurityContextApplyConfiguration {
	return coreac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(FlinkUID).
		WithRunAsGroup(FlinkUID).
		WithFSGroup(FlinkUID).
		WithSeccompProfile(coreac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// flinkSecurityContext is the Flink container's: no privilege escalation,
// no capabilities, and a read-only root filesystem, since every directory
// Flink writes is a volume of its own.
func flinkSecurityContext() *coreac.SecurityContextApplyConfiguration {
	return coreac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(coreac.Capabilities().WithDrop("ALL"))
}

// writableVolumes are the emptyDirs of TmpDir and LogDir.
func writableVolumes() []*coreac.VolumeApplyConfiguration {
	return []*coreac.VolumeApplyConfiguration{
		coreac.Volume().WithName(volumeTmp).WithEmptyDir(coreac.EmptyDirVolumeSource()),
		coreac.Volume().WithName(volumeLog).WithEmptyDir(coreac.EmptyDirVolumeSource()),
	}
}

func writableMounts() []*coreac.VolumeMountApplyConfiguration {
	return []*coreac.VolumeMountApplyConfiguration{
		coreac.VolumeMount().WithName(volumeTmp).WithMountPath(TmpDir),
		coreac.VolumeMount().WithName(volumeLog).WithMountPath(LogDir),
	}
}

// spread returns the JobManagers' pod anti-affinity (nil without high
// availability) or the TaskManagers' topology spread constraint, as
// spec.<component>.spread asks.
func spread(fc *v1.FlinkCluster, component string) (*coreac.AffinityApplyConfiguration, []*coreac.TopologySpreadConstraintApplyConfiguration) {
	sel := func() *metaac.LabelSelectorApplyConfiguration {
		return metaac.LabelSelector().WithMatchLabels(SelectorLabels(fc.Name, component))
	}
	if component == ComponentJobManager {
		mode := fc.Spec.JobManager.Spread
		if !haEnabled(fc) || mode == v1.SpreadNone {
			return nil, nil
		}
		node := coreac.PodAffinityTerm().WithLabelSelector(sel()).WithTopologyKey(corev1.LabelHostname)
		anti := coreac.PodAntiAffinity()
		if mode == v1.SpreadRequired {
			anti.WithRequiredDuringSchedulingIgnoredDuringExecution(node)
		} else {
			anti.WithPreferredDuringSchedulingIgnoredDuringExecution(
				coreac.WeightedPodAffinityTerm().WithWeight(100).WithPodAffinityTerm(node))
		}
		// Zones only ever preferred: a node without the zone label takes
		// no part in this term, so it costs nothing where nodes carry none.
		anti.WithPreferredDuringSchedulingIgnoredDuringExecution(
			coreac.WeightedPodAffinityTerm().WithWeight(50).WithPodAffinityTerm(
				coreac.PodAffinityTerm().WithLabelSelector(sel()).WithTopologyKey(corev1.LabelTopologyZone)))
		return coreac.Affinity().WithPodAntiAffinity(anti), nil
	}
	when := corev1.ScheduleAnyway
	switch fc.Spec.TaskManager.Spread {
	case v1.SpreadNone:
		return nil, nil
	case v1.SpreadRequired:
		when = corev1.DoNotSchedule
	}
	// Nodes only: the scheduler scores no node that lacks any constraint's
	// topology key, so a zone constraint would switch the node spread off
	// on clusters whose nodes have no zone label. A template adds one.
	return nil, []*coreac.TopologySpreadConstraintApplyConfiguration{
		coreac.TopologySpreadConstraint().
			WithMaxSkew(1).
			WithTopologyKey(corev1.LabelHostname).
			WithWhenUnsatisfiable(when).
			WithLabelSelector(sel()),
	}
}

// finishPodTemplate merges the cluster's pod template for a component over
// the one the operator built, puts back what the operator owns, mounts the
// directories of the plugins the Flink container enables, and gives every
// other container the restricted defaults it does not set itself. The
// Flink container is the first of the result.
func finishPodTemplate(base *coreac.PodTemplateSpecApplyConfiguration, tmpl *v1.PodTemplate) (*coreac.PodTemplateSpecApplyConfiguration, error) {
	out := base
	if tmpl != nil {
		var err error
		if out, err = mergePodTemplate(base, tmpl); err != nil {
			return nil, err
		}
	}
	flink := &out.Spec.Containers[0]
	mountPlugins(out.Spec, flink)
	for i := range out.Spec.InitContainers {
		sidecarDefaults(&out.Spec.InitContainers[i])
	}
	for i := range out.Spec.Containers[1:] {
		sidecarDefaults(&out.Spec.Containers[1+i])
	}
	return out, nil
}

// mergePodTemplate applies tmpl to base as a strategic merge patch, with
// the patch metadata of the Kubernetes pod types, then restores the
// operator's labels, annotations, volumes, mounts (by mount path), the
// Flink container's owned fields and its POD_IP variable.
func mergePodTemplate(base *coreac.PodTemplateSpecApplyConfiguration, tmpl *v1.PodTemplate) (*coreac.PodTemplateSpecApplyConfiguration, error) {
	original, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("marshal pod template: %w", err)
	}
	patch, err := json.Marshal(tmpl)
	if err != nil {
		return nil, fmt.Errorf("marshal spec pod template: %w", err)
	}
	merged, err := strategicpatch.StrategicMergePatch(original, patch, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("merge pod template: %w", err)
	}
	out := &coreac.PodTemplateSpecApplyConfiguration{}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("decode merged pod template: %w", err)
	}

	out.WithLabels(base.Labels).WithAnnotations(base.Annotations)
	want := base.Spec.Containers[0]
	flink := containerNamed(out.Spec.Containers, *want.Name)
	if flink == nil {
		return nil, fmt.Errorf("the merged pod template has no container %s", *want.Name)
	}
	flink.Image, flink.ImagePullPolicy = want.Image, want.ImagePullPolicy
	flink.Command, flink.Args = want.Command, want.Args
	flink.Ports, flink.Resources = want.Ports, want.Resources
	flink.LivenessProbe, flink.ReadinessProbe, flink.StartupProbe = want.LivenessProbe, want.ReadinessProbe, want.StartupProbe
	for _, e := range want.Env {
		if *e.Name == "POD_IP" {
			replaceEnv(flink, e)
		}
	}
	for _, m := range want.VolumeMounts {
		for i := range flink.VolumeMounts {
			if *flink.VolumeMounts[i].MountPath == *m.MountPath {
				flink.VolumeMounts[i] = m
			}
		}
	}
	for _, v := range base.Spec.Volumes {
		for i := range out.Spec.Volumes {
			if *out.Spec.Volumes[i].Name == *v.Name {
				out.Spec.Volumes[i] = v
			}
		}
	}
	// A strategic merge puts the patch's entries first; the operator's
	// come first instead, so the Flink container is Containers[0] (what
	// the operator and its tools read) and a template variable may refer
	// to the operator's, as $(POD_IP), which only earlier ones can be.
	flink.Env = baseFirst(flink.Env, want.Env, func(e coreac.EnvVarApplyConfiguration) string { return *e.Name })
	flink.VolumeMounts = baseFirst(flink.VolumeMounts, want.VolumeMounts, func(m coreac.VolumeMountApplyConfiguration) string { return *m.MountPath })
	out.Spec.Volumes = baseFirst(out.Spec.Volumes, base.Spec.Volumes, func(v coreac.VolumeApplyConfiguration) string { return *v.Name })
	out.Spec.Containers = baseFirst(out.Spec.Containers, base.Spec.Containers, func(c coreac.ContainerApplyConfiguration) string { return *c.Name })
	return out, nil
}

// baseFirst orders merged as base orders the entries it has, then the
// others in their merged order.
func baseFirst[T any](merged, base []T, key func(T) string) []T {
	rank := map[string]int{}
	for i, b := range base {
		rank[key(b)] = i
	}
	out := make([]T, 0, len(merged))
	for _, b := range base {
		for _, m := range merged {
			if key(m) == key(b) {
				out = append(out, m)
			}
		}
	}
	for _, m := range merged {
		if _, ok := rank[key(m)]; !ok {
			out = append(out, m)
		}
	}
	return out
}

func containerNamed(cs []coreac.ContainerApplyConfiguration, name string) *coreac.ContainerApplyConfiguration {
	for i := range cs {
		if cs[i].Name != nil && *cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func replaceEnv(c *coreac.ContainerApplyConfiguration, e coreac.EnvVarApplyConfiguration) {
	for i := range c.Env {
		if *c.Env[i].Name == *e.Name {
			c.Env[i] = e
			return
		}
	}
	c.Env = append(c.Env, e)
}

// enabledPlugins lists the plugin directory names (jar names without .jar)
// that the Flink container's ENABLE_BUILT_IN_PLUGINS asks the entrypoint to
// create under PluginsDir, from its literal value: the operator's, or a
// pod template's that replaced it.
func enabledPlugins(c *coreac.ContainerApplyConfiguration) []string {
	var names []string
	for _, e := range c.Env {
		if *e.Name != "ENABLE_BUILT_IN_PLUGINS" || e.Value == nil {
			continue
		}
		for _, jar := range strings.Split(*e.Value, ";") {
			name := strings.TrimSuffix(strings.TrimSpace(jar), ".jar")
			if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
				continue
			}
			names = append(names, name)
		}
	}
	return names
}

// mountPlugins gives each enabled plugin's directory a writable subPath of
// the flink-plugins emptyDir, so the entrypoint can link its jar there
// under a read-only root filesystem.
func mountPlugins(pod *coreac.PodSpecApplyConfiguration, flink *coreac.ContainerApplyConfiguration) {
	names := enabledPlugins(flink)
	if len(names) == 0 {
		return
	}
	for _, n := range names {
		flink.WithVolumeMounts(coreac.VolumeMount().WithName(volumePlugins).WithMountPath(PluginsDir + "/" + n).WithSubPath(n))
	}
	pod.WithVolumes(coreac.Volume().WithName(volumePlugins).WithEmptyDir(coreac.EmptyDirVolumeSource()))
}

// sidecarDefaults completes a container a template adds. It sets what the
// restricted Pod Security Standard needs of each container and a sidecar
// may leave out: no privilege escalation and no capabilities; what the
// container sets itself stays. And it drops an empty resources, which a
// Kubernetes container always marshals and which is no setting to own.
func sidecarDefaults(c *coreac.ContainerApplyConfiguration) {
	if r := c.Resources; r != nil && r.Limits == nil && r.Requests == nil && r.Claims == nil {
		c.Resources = nil
	}
	if c.SecurityContext == nil {
		c.SecurityContext = coreac.SecurityContext()
	}
	if c.SecurityContext.AllowPrivilegeEscalation == nil {
		c.SecurityContext.WithAllowPrivilegeEscalation(false)
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.WithCapabilities(coreac.Capabilities().WithDrop("ALL"))
	}
}
