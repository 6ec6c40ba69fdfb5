package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsac "k8s.io/client-go/applyconfigurations/apps/v1"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyac "k8s.io/client-go/applyconfigurations/policy/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Desired is every child object of one cluster, ready to apply.
type Desired struct {
	Config            FlinkConfig
	ConfigMap         *coreac.ConfigMapApplyConfiguration
	JobManager        *appsac.StatefulSetApplyConfiguration
	JobManagerService *coreac.ServiceApplyConfiguration
	TaskManager       *appsac.StatefulSetApplyConfiguration
	// TaskManagerBudget keeps voluntary disruptions (node drains) to one
	// TaskManager at a time, so a drain restarts a job once, not per pod.
	TaskManagerBudget *policyac.PodDisruptionBudgetApplyConfiguration
	// HAAccess is nil unless the operator gives the pods an account for
	// Kubernetes HA.
	HAAccess *HAAccess
	// SQLGatewayPolicy is nil unless the cluster runs a SQL job.
	SQLGatewayPolicy *networkingac.NetworkPolicyApplyConfiguration
}

// Build renders the desired children of a cluster on platform p.
func Build(fc *v1.FlinkCluster, p Platform) (*Desired, error) {
	cfg, err := RenderConfig(fc, p)
	if err != nil {
		return nil, err
	}
	st := StateOf(fc, p)
	jm, err := jobManager(fc, cfg, st)
	if err != nil {
		return nil, fmt.Errorf("spec.jobManager.podTemplate: %w", err)
	}
	tm, err := taskManager(fc, cfg, st)
	if err != nil {
		return nil, fmt.Errorf("spec.taskManager.podTemplate: %w", err)
	}
	d := &Desired{
		Config:            cfg,
		ConfigMap:         configMap(fc, cfg),
		JobManager:        jm,
		JobManagerService: jobManagerService(fc),
		TaskManager:       tm,
		TaskManagerBudget: taskManagerBudget(fc),
		HAAccess:          haAccess(fc, p),
		SQLGatewayPolicy:  sqlGatewayPolicy(fc, p),
	}
	if d.SQLGatewayPolicy != nil {
		stampSpecHash(d.SQLGatewayPolicy, d.SQLGatewayPolicy.ObjectMetaApplyConfiguration)
	}
	// The template hash says which rendering the pods run, apart from the
	// replica count: a reconcile that finds another one for the same spec
	// knows the operator itself changed how it renders.
	stampHash(d.JobManager.Spec.Template, d.JobManager.ObjectMetaApplyConfiguration, AnnotationTemplateHash)
	stampHash(d.TaskManager.Spec.Template, d.TaskManager.ObjectMetaApplyConfiguration, AnnotationTemplateHash)
	// The spec hash covers everything the operator sets on a child, so a
	// cached child carrying the same hash needs no write.
	stampSpecHash(d.ConfigMap, d.ConfigMap.ObjectMetaApplyConfiguration)
	stampSpecHash(d.JobManager, d.JobManager.ObjectMetaApplyConfiguration)
	stampSpecHash(d.JobManagerService, d.JobManagerService.ObjectMetaApplyConfiguration)
	stampSpecHash(d.TaskManager, d.TaskManager.ObjectMetaApplyConfiguration)
	stampSpecHash(d.TaskManagerBudget, d.TaskManagerBudget.ObjectMetaApplyConfiguration)
	return d, nil
}

func stampSpecHash(obj any, meta *metaac.ObjectMetaApplyConfiguration) {
	stampHash(obj, meta, AnnotationSpecHash)
}

func stampHash(obj any, meta *metaac.ObjectMetaApplyConfiguration, annotation string) {
	raw, err := json.Marshal(obj)
	if err != nil {
		// Apply configurations are plain structs; marshalling cannot fail.
		panic(fmt.Sprintf("marshal apply configuration: %v", err))
	}
	sum := sha256.Sum256(raw)
	meta.WithAnnotations(map[string]string{annotation: hex.EncodeToString(sum[:8])})
}

func ownerRef(fc *v1.FlinkCluster) *metaac.OwnerReferenceApplyConfiguration {
	return metaac.OwnerReference().
		WithAPIVersion(v1.GroupVersion.String()).
		WithKind("FlinkCluster").
		WithName(fc.Name).
		WithUID(fc.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func configMap(fc *v1.FlinkCluster, cfg FlinkConfig) *coreac.ConfigMapApplyConfiguration {
	return coreac.ConfigMap(ConfigMapName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentConfig)).
		WithOwnerReferences(ownerRef(fc)).
		WithData(cfg.Files())
}

// Image is the container image of the cluster.
func Image(fc *v1.FlinkCluster) string {
	if fc.Spec.Image != "" {
		return fc.Spec.Image
	}
	return "flink:" + fc.Spec.Version
}

func haEnabled(fc *v1.FlinkCluster) bool { return fc.Spec.HighAvailable() }

func jobManager(fc *v1.FlinkCluster, cfg FlinkConfig, st State) (*appsac.StatefulSetApplyConfiguration, error) {
	args := []string{"jobmanager"}
	if haEnabled(fc) {
		// With HA each JobManager publishes its own address through the
		// leader election, so it must bind to its pod IP, not the Service.
		args = append(args, "$(POD_IP)")
	}
	c := flinkContainer(fc, st, "jobmanager", args, containerResources(fc.Spec.JobManager.Resources, jobManagerMemory(fc))).
		WithPorts(
			coreac.ContainerPort().WithName("rpc").WithContainerPort(PortRPC),
			coreac.ContainerPort().WithName("blob").WithContainerPort(PortBlob),
			coreac.ContainerPort().WithName("rest").WithContainerPort(PortREST),
		).
		WithReadinessProbe(tcpProbe("rest", 5, 10)).
		WithLivenessProbe(tcpProbe("rpc", 30, 30))
	replicas := fc.Spec.JobManager.Replicas
	if replicas < 1 {
		replicas = 1
	}
	tmpl, err := podTemplate(fc, cfg, st, ComponentJobManager, c, nil)
	if err != nil {
		return nil, err
	}
	if SQLJob(fc) {
		tmpl.Spec.WithContainers(sqlGateway(fc, st))
	}
	return appsac.StatefulSet(JobManagerName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentJobManager)).
		WithOwnerReferences(ownerRef(fc)).
		WithSpec(appsac.StatefulSetSpec().
			WithReplicas(replicas).
			// The JobManager's own Service: it gives the pods their
			// subdomain, which nothing reads (it is not headless).
			WithServiceName(JobManagerName(fc)).
			// Parallel: no pod waits for another to turn ready. Under
			// OrderedReady the StatefulSet controller holds a rolling update
			// behind a pod that never turns ready (a bad template), and the
			// next template would never replace it; under Parallel it does.
			// A rolling update still replaces one pod at a time, the old
			// pod gone before its successor of the same name starts: with
			// one JobManager (no HA) that is what Recreate did, with HA a
			// standby takes over while each is replaced.
			WithPodManagementPolicy(appsv1.ParallelPodManagement).
			WithUpdateStrategy(appsac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
			WithSelector(metaac.LabelSelector().WithMatchLabels(SelectorLabels(fc.Name, ComponentJobManager))).
			WithTemplate(tmpl)), nil
}

// LegacyJobManager is the JobManager as clusters created before it became a
// StatefulSet run it: a Deployment of the same pod template and replicas,
// built exactly as they were built (its spec hash unchanged), so such a
// cluster is not rolled by the operator's upgrade. Applied only while that
// Deployment exists (internal/workload).
func (d *Desired) LegacyJobManager() *appsac.DeploymentApplyConfiguration {
	sts := d.JobManager
	dep := appsac.Deployment(*sts.Name, *sts.Namespace).
		WithLabels(sts.Labels)
	for i := range sts.OwnerReferences {
		dep.WithOwnerReferences(&sts.OwnerReferences[i])
	}
	dep.WithSpec(appsac.DeploymentSpec().
		WithReplicas(*sts.Spec.Replicas).
		WithSelector(sts.Spec.Selector).
		// A JobManager holds no local state worth keeping; replacing it
		// first avoids two leaders fighting over one Service address
		// when high availability is off.
		WithStrategy(appsac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
		WithTemplate(sts.Spec.Template))
	dep.WithAnnotations(map[string]string{AnnotationTemplateHash: sts.Annotations[AnnotationTemplateHash]})
	stampSpecHash(dep, dep.ObjectMetaApplyConfiguration)
	return dep
}

func taskManager(fc *v1.FlinkCluster, cfg FlinkConfig, st State) (*appsac.StatefulSetApplyConfiguration, error) {
	c := flinkContainer(fc, st, "taskmanager", []string{"taskmanager"}, containerResources(fc.Spec.TaskManager.Resources, taskManagerMemory(fc))).
		WithPorts(coreac.ContainerPort().WithName("rpc").WithContainerPort(PortTaskManagerRPC)).
		WithReadinessProbe(tcpProbe("rpc", 5, 10)).
		WithLivenessProbe(tcpProbe("rpc", 30, 30))
	var dataVolume *coreac.VolumeApplyConfiguration
	spec := appsac.StatefulSetSpec().
		WithReplicas(fc.Spec.TaskManager.Replicas).
		// No Service by this name is created: Flink's TaskManagers need no
		// DNS names (each registers its IP: taskmanager.network.bind-policy
		// "ip"; the JobManager and the other TaskManagers dial that), and a
		// Service is one more object for the control plane per cluster.
		// The name stays because it is immutable on StatefulSets created
		// with it; it gives the pods their subdomain, which nothing reads.
		WithServiceName(TaskManagerName(fc)).
		// TaskManagers are interchangeable: start and stop them in parallel.
		// Updates still roll one pod at a time.
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		WithUpdateStrategy(appsac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
		WithSelector(metaac.LabelSelector().WithMatchLabels(SelectorLabels(fc.Name, ComponentTaskManager)))
	if st := fc.Spec.TaskManager.Storage; st != nil {
		pvc := coreac.PersistentVolumeClaim("data", "").
			WithLabels(SelectorLabels(fc.Name, ComponentTaskManager)).
			WithSpec(coreac.PersistentVolumeClaimSpec().
				WithAccessModes(corev1.ReadWriteOnce).
				WithResources(coreac.VolumeResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceStorage: st.Size})))
		if st.StorageClassName != nil {
			pvc.Spec.WithStorageClassName(*st.StorageClassName)
		}
		// The finalizer deletes the claims when the cluster goes; scaling
		// down keeps them so a TaskManager that returns finds its state.
		spec.WithVolumeClaimTemplates(pvc).
			WithPersistentVolumeClaimRetentionPolicy(appsac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
	} else {
		dataVolume = coreac.Volume().WithName("data").WithEmptyDir(coreac.EmptyDirVolumeSource())
	}
	tmpl, err := podTemplate(fc, cfg, st, ComponentTaskManager, c, dataVolume)
	if err != nil {
		return nil, err
	}
	spec.WithTemplate(tmpl)
	return appsac.StatefulSet(TaskManagerName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentTaskManager)).
		WithOwnerReferences(ownerRef(fc)).
		WithSpec(spec), nil
}

func flinkContainer(fc *v1.FlinkCluster, st State, name string, args []string, res corev1.ResourceRequirements) *coreac.ContainerApplyConfiguration {
	c := coreac.Container().
		WithName(name).
		WithImage(Image(fc)).
		WithArgs(args...).
		WithEnv(coreac.EnvVar().WithName("POD_IP").WithValueFrom(
			coreac.EnvVarSource().WithFieldRef(coreac.ObjectFieldSelector().WithFieldPath("status.podIP"))))
	if fc.Spec.ImagePullPolicy != "" {
		c.WithImagePullPolicy(fc.Spec.ImagePullPolicy)
	}
	if plugins := builtInPlugins(fc, st); plugins != "" {
		c.WithEnv(coreac.EnvVar().WithName("ENABLE_BUILT_IN_PLUGINS").WithValue(plugins))
	}
	c.WithResources(coreac.ResourceRequirements().WithLimits(res.Limits).WithRequests(res.Requests))
	c.WithSecurityContext(flinkSecurityContext())
	c.WithVolumeMounts(
		coreac.VolumeMount().WithName("flink-config").WithMountPath(ConfDir),
		coreac.VolumeMount().WithName("data").WithMountPath(DataDir),
	)
	c.WithVolumeMounts(writableMounts()...)
	if st.Claim != "" {
		c.WithVolumeMounts(coreac.VolumeMount().WithName("shared").WithMountPath(SharedDir))
	}
	if k := fc.Spec.Kafka; k != nil {
		c.WithEnv(coreac.EnvVar().WithName("KAFKA_BOOTSTRAP_SERVERS").WithValue(k.Bootstrap.Servers))
		if k.TLS != nil && k.TLS.Enabled && k.TLS.SecretRef != nil {
			c.WithVolumeMounts(coreac.VolumeMount().WithName("kafka-tls").WithMountPath(KafkaTLSDir).WithReadOnly(true))
		}
		if k.SASL != nil {
			c.WithVolumeMounts(coreac.VolumeMount().WithName("kafka-sasl").WithMountPath(KafkaSASLDir).WithReadOnly(true))
		}
	}
	return c
}

func podTemplate(fc *v1.FlinkCluster, cfg FlinkConfig, st State, component string, c *coreac.ContainerApplyConfiguration, dataVolume *coreac.VolumeApplyConfiguration) (*coreac.PodTemplateSpecApplyConfiguration, error) {
	pod := coreac.PodSpec().
		WithContainers(c).
		WithVolumes(coreac.Volume().WithName("flink-config").WithConfigMap(
			coreac.ConfigMapVolumeSource().WithName(ConfigMapName(fc))))
	if dataVolume != nil {
		pod.WithVolumes(dataVolume)
	} else if component == ComponentJobManager {
		pod.WithVolumes(coreac.Volume().WithName("data").WithEmptyDir(coreac.EmptyDirVolumeSource()))
	}
	if st.Claim != "" {
		pod.WithVolumes(coreac.Volume().WithName("shared").WithPersistentVolumeClaim(
			coreac.PersistentVolumeClaimVolumeSource().WithClaimName(st.Claim)))
	}
	if k := fc.Spec.Kafka; k != nil {
		if k.TLS != nil && k.TLS.Enabled && k.TLS.SecretRef != nil {
			pod.WithVolumes(coreac.Volume().WithName("kafka-tls").WithSecret(coreac.SecretVolumeSource().WithSecretName(k.TLS.SecretRef.Name)))
		}
		if k.SASL != nil {
			pod.WithVolumes(coreac.Volume().WithName("kafka-sasl").WithSecret(coreac.SecretVolumeSource().WithSecretName(k.SASL.SecretRef.Name)))
		}
	}
	if sa := podServiceAccount(fc); sa != "" {
		// The API server copies serviceAccountName into the deprecated
		// serviceAccount, and back when the first is empty: owning both
		// lets a later apply without an account drop both, instead of the
		// left-over serviceAccount bringing the old account back.
		pod.WithServiceAccountName(sa).WithDeprecatedServiceAccount(sa)
	}
	if !KubernetesHA(fc) {
		// A standalone Flink talks to the API server only through its
		// Kubernetes HA services (KubernetesHaServicesFactory, over
		// Fabric8FlinkKubeClient); without them a token in the pod only
		// serves whoever takes the pod over.
		pod.WithAutomountServiceAccountToken(false)
	}
	pod.WithVolumes(writableVolumes()...)
	pod.WithSecurityContext(podSecurityContext())
	tmpl := fc.Spec.TaskManager.PodTemplate
	if component == ComponentJobManager {
		tmpl = fc.Spec.JobManager.PodTemplate
	}
	affinity, constraints := spread(fc, component)
	if affinity != nil {
		pod.WithAffinity(affinity)
	}
	pod.WithTopologySpreadConstraints(constraints...)
	return finishPodTemplate(coreac.PodTemplateSpec().
		WithLabels(Labels(fc, component)).
		WithAnnotations(map[string]string{AnnotationConfigHash: cfg.Hash}).
		WithSpec(pod), tmpl)
}

func jobManagerService(fc *v1.FlinkCluster) *coreac.ServiceApplyConfiguration {
	return coreac.Service(JobManagerName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentJobManager)).
		WithOwnerReferences(ownerRef(fc)).
		WithSpec(coreac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(fc.Name, ComponentJobManager)).
			WithPorts(
				servicePort("rpc", PortRPC),
				servicePort("blob", PortBlob),
				servicePort("rest", PortREST),
			))
}

func taskManagerBudget(fc *v1.FlinkCluster) *policyac.PodDisruptionBudgetApplyConfiguration {
	return policyac.PodDisruptionBudget(TaskManagerName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentTaskManager)).
		WithOwnerReferences(ownerRef(fc)).
		WithSpec(policyac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metaac.LabelSelector().WithMatchLabels(SelectorLabels(fc.Name, ComponentTaskManager))))
}

func servicePort(name string, port int32) *coreac.ServicePortApplyConfiguration {
	return coreac.ServicePort().WithName(name).WithPort(port).
		WithTargetPort(intstr.FromString(name)).WithProtocol(corev1.ProtocolTCP)
}

func tcpProbe(port string, initialDelay, period int32) *coreac.ProbeApplyConfiguration {
	return coreac.Probe().
		WithTCPSocket(coreac.TCPSocketAction().WithPort(intstr.FromString(port))).
		WithInitialDelaySeconds(initialDelay).
		WithPeriodSeconds(period)
}
