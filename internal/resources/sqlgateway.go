package resources

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingac "k8s.io/client-go/applyconfigurations/networking/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// PortSQLGateway is the SQL Gateway's REST port (SqlGatewayRestOptions.PORT's
// default); no Service publishes it.
const PortSQLGateway = 8083

// SQLGatewayContainer is the name of the JobManager pod's SQL Gateway
// container.
const SQLGatewayContainer = "sql-gateway"

// SQLJob reports whether the cluster runs a SQL job.
func SQLJob(fc *v1.FlinkCluster) bool { return fc.Spec.Job != nil && fc.Spec.Job.SQL != nil }

// SQLGatewayPolicyName is the NetworkPolicy that admits only the operator
// to the SQL Gateway's port.
func SQLGatewayPolicyName(fc *v1.FlinkCluster) string { return fc.Name + "-sql-gateway" }

// sqlGateway is the SQL Gateway beside the JobManager, in its pod: the
// official image's bin/sql-gateway.sh in the foreground, reading the
// JobManager's configuration (the same ConfigMap, so the client it builds
// for a job has the cluster's checkpointing, state and HA settings), its
// REST endpoint on the pod's IP at PortSQLGateway, pointed at the
// JobManager beside it (execution.target remote, rest.address localhost:
// with high availability the client retrieves the leader's address from
// the HA services the configuration names). The entrypoint does not run
// for it, so nothing edits its configuration.
func sqlGateway(fc *v1.FlinkCluster, st State) *coreac.ContainerApplyConfiguration {
	args := []string{"start-foreground",
		"-Dsql-gateway.endpoint.rest.address=$(POD_IP)",
		"-Dsql-gateway.endpoint.rest.bind-address=0.0.0.0",
		fmt.Sprintf("-Dsql-gateway.endpoint.rest.port=%d", PortSQLGateway),
		"-Dexecution.target=remote",
		"-Drest.address=localhost",
		fmt.Sprintf("-Drest.port=%d", PortREST),
	}
	res := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("250m")},
	}
	return flinkContainer(fc, st, SQLGatewayContainer, args, res).
		WithCommand(FlinkHome + "/bin/sql-gateway.sh").
		WithPorts(coreac.ContainerPort().WithName("sql-gateway").WithContainerPort(PortSQLGateway)).
		WithReadinessProbe(tcpProbe("sql-gateway", 5, 10))
}

// sqlGatewayPolicy admits connections to the JobManager pods' SQL Gateway
// port only from the operator's pods (app.kubernetes.io/name: datapilot,
// in the operator's namespace when it is known), and every other port
// from anywhere: NetworkPolicies add up, so the pods stay as reachable as
// they were except for the gateway. nil without a SQL job.
func sqlGatewayPolicy(fc *v1.FlinkCluster, p Platform) *networkingac.NetworkPolicyApplyConfiguration {
	if !SQLJob(fc) {
		return nil
	}
	tcp := corev1.ProtocolTCP
	rangePort := func(from, to int32) *networkingac.NetworkPolicyPortApplyConfiguration {
		return networkingac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromInt32(from)).WithEndPort(to)
	}
	operator := networkingac.NetworkPolicyPeer().WithPodSelector(metaac.LabelSelector().WithMatchLabels(map[string]string{"app.kubernetes.io/name": "datapilot"}))
	if p.OperatorNamespace != "" {
		operator.WithNamespaceSelector(metaac.LabelSelector().WithMatchLabels(map[string]string{corev1.LabelMetadataName: p.OperatorNamespace}))
	}
	return networkingac.NetworkPolicy(SQLGatewayPolicyName(fc), fc.Namespace).
		WithLabels(Labels(fc, ComponentJobManager)).
		WithOwnerReferences(ownerRef(fc)).
		WithSpec(networkingac.NetworkPolicySpec().
			WithPodSelector(metaac.LabelSelector().WithMatchLabels(SelectorLabels(fc.Name, ComponentJobManager))).
			WithPolicyTypes("Ingress").
			WithIngress(
				networkingac.NetworkPolicyIngressRule().WithPorts(rangePort(1, PortSQLGateway-1), rangePort(PortSQLGateway+1, 65535),
					networkingac.NetworkPolicyPort().WithProtocol(corev1.ProtocolUDP).WithPort(intstr.FromInt32(1)).WithEndPort(65535)),
				networkingac.NetworkPolicyIngressRule().WithFrom(operator).
					WithPorts(networkingac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromInt32(PortSQLGateway))),
			))
}
