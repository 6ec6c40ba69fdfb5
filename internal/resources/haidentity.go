package resources

import (
	"strings"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// HAIdentity is the identity of the cluster's Flink HA data. Flink keeps
// the leader, the job graphs and the checkpoint pointers under it
// (ZooKeeper nodes under high-availability.cluster-id, files under
// <storageDir>/<cluster-id>, ConfigMaps named and labelled by
// kubernetes.cluster-id), and a new leader recovers every job it finds
// there. Taken from the name, two clusters could share it (team-a/prod and
// team/a-prod are both team-a-prod in one ZooKeeper) and a cluster
// re-created under a deleted one's name would recover the deleted job
// beside its own. So it carries the object's UID: unique per object and
// fixed for its life.
//
// It never changes under a running cluster: with another cluster-id its
// JobManagers would find an empty HA store and lose the pointers to its
// jobs and checkpoints. So the identity is recorded in status when the
// operator first deploys the cluster (computeStatus) and the recorded one
// is used from then on. A cluster an older operator deployed (its status
// written, no identity in it) keeps the name-based identity it runs
// under; so does an object without a UID (rendered offline, never stored).
func HAIdentity(fc *v1.FlinkCluster) v1.HighAvailabilityStatus {
	if r := fc.Status.HighAvailability; r != nil {
		return *r
	}
	if fc.Status.ObservedGeneration > 0 || fc.UID == "" {
		return v1.HighAvailabilityStatus{ClusterID: fc.Namespace + "-" + fc.Name, KubernetesClusterID: fc.Name}
	}
	uid := string(fc.UID)
	return v1.HighAvailabilityStatus{
		ClusterID:           fc.Namespace + "-" + fc.Name + "-" + uid,
		KubernetesClusterID: nameWithUID(fc.Name, uid),
	}
}

// maxLabelValue bounds kubernetes.cluster-id: it is the value of the app
// label Flink puts on its HA ConfigMaps (KubernetesUtils#getConfigMapLabels).
const maxLabelValue = 63

// nameWithUID is the name, shortened to fit a label value, then the UID.
func nameWithUID(name, uid string) string {
	prefix := strings.TrimRight(name[:min(len(name), maxLabelValue-1-len(uid))], "-.")
	if prefix == "" {
		return uid
	}
	return prefix + "-" + uid
}

// HAConfigMapLabels select the ConfigMaps Flink's Kubernetes HA services
// keep for a cluster: every one is labelled app=<kubernetes.cluster-id>,
// type=flink-native-kubernetes and configmap-type=high-availability
// (KubernetesUtils#getConfigMapLabels, Constants; the same in every
// supported minor), whatever its name (<cluster-id>-cluster-config-map,
// <cluster-id>-<job ID>-config-map from 1.15, <cluster-id>-<component>-leader
// with the old HA services). Flink itself deletes them by these labels
// when the cluster shuts down for good (internalCleanup).
func HAConfigMapLabels(id v1.HighAvailabilityStatus) map[string]string {
	return map[string]string{
		"app":            id.KubernetesClusterID,
		"type":           "flink-native-kubernetes",
		"configmap-type": "high-availability",
	}
}
