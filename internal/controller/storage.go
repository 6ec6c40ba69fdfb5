package controller

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// storageFacts is where a cluster's state lives and what of it would be
// lost with a pod.
type storageFacts struct {
	state resources.State
	// podLocal names what the cluster needs shared but has on a pod's disk;
	// such a cluster is not deployed.
	podLocal []string
	ha       bool
}

func observeStorage(fc *v1.FlinkCluster, p resources.Platform) storageFacts {
	return storageFacts{
		state:    resources.StateOf(fc, p),
		podLocal: resources.PodLocal(fc, p),
		ha:       fc.Spec.HighAvailability != nil && fc.Spec.HighAvailability.Mode != v1.HighAvailabilityNone,
	}
}

// blocked reports whether deploying would lose state.
func (s storageFacts) blocked() bool { return len(s.podLocal) > 0 }

// blockedVerdict is the reason a blocked cluster was not deployed.
func (s storageFacts) blockedVerdict() verdict {
	return verdict{metav1.ConditionFalse, "SharedStorageRequired", fmt.Sprintf(
		"Not deployed: state that must outlive a pod would be on each pod's own disk, for %s; set spec.storage (uri or claimName), or the operator's STATE_STORAGE_URI or STATE_STORAGE_CLAIM",
		strings.Join(s.podLocal, " and "))}
}

// sharedStorage is the SharedStorage condition.
func (s storageFacts) sharedStorage() verdict {
	if s.blocked() {
		return s.blockedVerdict()
	}
	dirs := []string{"checkpoints at " + s.state.Checkpoints, "savepoints at " + s.state.Savepoints}
	shared := s.state.Shared(s.state.Checkpoints) && s.state.Shared(s.state.Savepoints)
	if s.ha {
		dirs = append(dirs, "HA metadata at "+s.state.HA)
		shared = shared && s.state.Shared(s.state.HA)
	}
	if !shared {
		return verdict{metav1.ConditionFalse, "PodLocal", fmt.Sprintf(
			"State is on each pod's own disk and is lost with the pod (%s); set spec.storage or the operator's STATE_STORAGE_URI for state that survives",
			strings.Join(dirs, ", "))}
	}
	return verdict{metav1.ConditionTrue, "Shared", "State is on shared storage: " + strings.Join(dirs, ", ")}
}
