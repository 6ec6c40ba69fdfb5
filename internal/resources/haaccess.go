package resources

import (
	rbacv1 "k8s.io/api/rbac/v1"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacac "k8s.io/client-go/applyconfigurations/rbac/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// HAConfigMapVerbs are the verbs on ConfigMaps, in the cluster's namespace,
// that the JobManagers and TaskManagers use with Flink's Kubernetes HA
// services. They use no other resource.
//
// Flink's documentation (docs/deployment/ha/kubernetes_ha.md, "RBAC example")
// lists get, list, watch, create, update and delete: the leader ConfigMaps
// are created, read and replaced (fabric8's ConfigMapLock and
// Fabric8FlinkKubeClient.checkAndUpdateConfigMap), watched through a shared
// informer (list, watch), and deleted by name (deleteConfigMap). Flink's sources need
// two verbs more in the releases this operator runs:
//   - patch: since fabric8 6.6, ResourceLock.update renews the leader
//     ConfigMap with a JSON merge patch (Flink 2.1 ships fabric8 7.3.1,
//     FLINK-38093);
//   - deletecollection: since fabric8 6.0 (Flink 1.18, FLINK-31997),
//     Fabric8FlinkKubeClient.deleteConfigMapsByLabels, which removes the HA
//     ConfigMaps when a cluster shuts down for good, is one DELETE on the
//     collection with a label selector (BaseOperation.deleteAll; it falls
//     back to single deletes only on 405, not on 403).
func HAConfigMapVerbs() []string {
	return []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
}

// KubernetesHA reports whether the cluster uses Flink's Kubernetes HA services.
func KubernetesHA(fc *v1.FlinkCluster) bool {
	return fc.Spec.HighAvailability != nil && fc.Spec.HighAvailability.Mode == v1.HighAvailabilityKubernetes
}

// managesHAAccess reports whether the operator gives the pods an account of
// their own: the namespace's default account may not use ConfigMaps, and an
// account the user names is the user's to grant.
func managesHAAccess(fc *v1.FlinkCluster) bool {
	return KubernetesHA(fc) && fc.Spec.ServiceAccountName == ""
}

// podServiceAccount is the account the Flink pods run as; empty means the
// namespace's default.
func podServiceAccount(fc *v1.FlinkCluster) string {
	if managesHAAccess(fc) {
		return HighAvailabilityName(fc)
	}
	return fc.Spec.ServiceAccountName
}

// HAAccess lets the pods of a cluster with Kubernetes HA use ConfigMaps: a
// ServiceAccount, and a RoleBinding in the cluster's namespace to the
// platform's HA ClusterRole (HAConfigMapVerbs). The operator binds that
// ClusterRole (it holds bind on it) instead of writing a Role, which RBAC
// would let it create only if it held every right in it.
type HAAccess struct {
	ServiceAccount *coreac.ServiceAccountApplyConfiguration
	RoleBinding    *rbacac.RoleBindingApplyConfiguration
}

// haAccess builds the cluster's HAAccess, or nil when the operator manages none.
func haAccess(fc *v1.FlinkCluster, p Platform) *HAAccess {
	if !managesHAAccess(fc) {
		return nil
	}
	name := HighAvailabilityName(fc)
	// Without the version label: these objects do not change with the Flink
	// version, so an upgrade costs no write for them.
	labels := SelectorLabels(fc.Name, ComponentHighAvailability)
	a := &HAAccess{
		ServiceAccount: coreac.ServiceAccount(name, fc.Namespace).
			WithLabels(labels).
			WithOwnerReferences(ownerRef(fc)),
		RoleBinding: rbacac.RoleBinding(name, fc.Namespace).
			WithLabels(labels).
			WithOwnerReferences(ownerRef(fc)).
			WithRoleRef(HARoleRef(p)).
			WithSubjects(rbacac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(fc.Namespace)),
	}
	stampSpecHash(a.ServiceAccount, a.ServiceAccount.ObjectMetaApplyConfiguration)
	stampSpecHash(a.RoleBinding, a.RoleBinding.ObjectMetaApplyConfiguration)
	return a
}

// HARoleRef is what the pods' RoleBinding refers to.
func HARoleRef(p Platform) *rbacac.RoleRefApplyConfiguration {
	return rbacac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(p.haClusterRole())
}
