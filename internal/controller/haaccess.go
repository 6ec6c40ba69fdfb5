package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// Kubernetes HA: the operator's own account for a cluster's pods, bound to
// the platform's HA ClusterRole, or a SubjectAccessReview of the account
// the user names.
//
// The operator holds bind on that ClusterRole alone (the default name
// here; the chart grants its own), not the ConfigMap rights in it: RBAC
// lets a RoleBinding to a role through when its creator may bind it.
//
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=datapilot-flink-ha
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// haChildren are the HA ServiceAccount and RoleBinding to apply, none when
// the operator manages no account for the cluster. A RoleBinding's roleRef
// cannot change: one an older operator bound to a Role of its own is
// deleted first, and created again bound to the ClusterRole.
func (r *Reconciler) haChildren(ctx context.Context, s *scope) []child {
	a := s.desired.HAAccess
	if a == nil {
		return nil
	}
	children := []child{
		{kind: "ServiceAccount", name: *a.ServiceAccount.Name, hash: specHash(a.ServiceAccount.Annotations), cached: &corev1.ServiceAccount{}, desired: a.ServiceAccount},
	}
	old := &rbacv1.RoleBinding{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.fc.Namespace, Name: *a.RoleBinding.Name}, old)
	if err == nil && metav1.IsControlledBy(old, s.fc) && (old.RoleRef.Kind != *a.RoleBinding.RoleRef.Kind || old.RoleRef.Name != *a.RoleBinding.RoleRef.Name) {
		uid := old.UID
		if err := r.Client.Delete(ctx, old, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "Delete the RoleBinding to rebind it", "flinkcluster", klog.KObj(s.fc))
		}
		return children // the deletion's event brings the next reconcile
	}
	return append(children, child{kind: "RoleBinding", name: *a.RoleBinding.Name, hash: specHash(a.RoleBinding.Annotations), cached: &rbacv1.RoleBinding{}, desired: a.RoleBinding})
}

// pruneHAAccess deletes the HA ServiceAccount and RoleBinding of a cluster
// that no longer needs them (HA mode changed, or the user named an
// account). A Role an older operator made stays until the cluster goes
// (it is owned by it, and bound by nothing). It looks in the cache first, so a cluster that never had them
// costs no request, and deletes only objects this cluster controls.
func (r *Reconciler) pruneHAAccess(ctx context.Context, s *scope) error {
	if s.desired.HAAccess != nil {
		return nil
	}
	key := types.NamespacedName{Namespace: s.fc.Namespace, Name: resources.HighAvailabilityName(s.fc)}
	var errs []error
	var deleted []string
	for _, c := range []struct {
		kind string
		obj  client.Object
	}{{"RoleBinding", &rbacv1.RoleBinding{}}, {"ServiceAccount", &corev1.ServiceAccount{}}} {
		err := r.Client.Get(ctx, key, c.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s %s: %w", c.kind, key.Name, err))
			continue
		}
		if !metav1.IsControlledBy(c.obj, s.fc) {
			continue
		}
		uid := c.obj.GetUID()
		if err := r.Client.Delete(ctx, c.obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", c.kind, key.Name, err))
			continue
		}
		deleted = append(deleted, c.kind+" "+key.Name)
	}
	if len(deleted) > 0 {
		log.FromContext(ctx).Info("Deleted the Kubernetes HA account", "flinkcluster", klog.KObj(s.fc), "objects", deleted)
		r.Recorder.Eventf(s.fc, nil, corev1.EventTypeNormal, "Deleted", "Delete", "Deleted %s, no longer needed", strings.Join(deleted, ", "))
	}
	return errors.Join(errs...)
}

// How long a review of a user's account stands. Rights change outside the
// cluster's spec (someone grants a Role), so a verdict expires; missing
// rights are looked at again sooner, so a fix shows within a minute, and
// granted ones rarely, so a converged cluster stays quiet.
const (
	haReviewGranted = 10 * time.Minute
	haReviewMissing = time.Minute
)

// haPermissions is what SubjectAccessReviews said of the account a
// cluster's pods run as.
type haPermissions struct {
	account    string
	generation int64
	reviewedAt time.Time
	// missing are the verbs on configmaps the account lacks.
	missing []string
	// err is why the review could not be made.
	err error
}

// haReviewDue is how long the last review still stands for this account at
// this generation; zero or less means review now.
func haReviewDue(last *haPermissions, account string, generation int64, now time.Time) time.Duration {
	if last == nil || last.account != account || last.generation != generation {
		return 0
	}
	validity := haReviewGranted
	if last.err != nil || len(last.missing) > 0 {
		validity = haReviewMissing
	}
	return last.reviewedAt.Add(validity).Sub(now)
}

// haReviews remembers the last review per cluster, so the reconciles
// between two reviews send none.
type haReviews struct {
	mu   sync.Mutex
	last map[types.NamespacedName]haPermissions
}

func (h *haReviews) get(key types.NamespacedName) *haPermissions {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.last[key]; ok {
		return &p
	}
	return nil
}

func (h *haReviews) put(key types.NamespacedName, p haPermissions) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[types.NamespacedName]haPermissions{}
	}
	h.last[key] = p
}

func (h *haReviews) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.last, key)
}

// checkHAPermissions returns the rights of the account the user named for a
// cluster with Kubernetes HA, reviewed when the spec changed or the last
// review expired, and when to look again. Nil when there is nothing to check.
func (r *Reconciler) checkHAPermissions(ctx context.Context, fc *v1.FlinkCluster) (*haPermissions, time.Duration) {
	key := client.ObjectKeyFromObject(fc)
	if !resources.KubernetesHA(fc) || fc.Spec.ServiceAccountName == "" {
		r.haReviews.forget(key)
		return nil, 0
	}
	account, now := fc.Spec.ServiceAccountName, time.Now()
	last := r.haReviews.get(key)
	if wait := haReviewDue(last, account, fc.Generation, now); wait > 0 {
		return last, wait
	}
	p := haPermissions{account: account, generation: fc.Generation, reviewedAt: now}
	p.missing, p.err = r.reviewConfigMapAccess(ctx, fc.Namespace, account)
	r.haReviews.put(key, p)
	log.FromContext(ctx).Info("Reviewed the ServiceAccount's rights for Kubernetes HA", "flinkcluster", klog.KObj(fc),
		"serviceAccount", account, "missing", p.missing, "error", p.err)
	return &p, haReviewDue(&p, account, fc.Generation, now)
}

// reviewConfigMapAccess asks the API server's authorizer, one verb at a
// time, which of HAConfigMapVerbs the ServiceAccount lacks.
func (r *Reconciler) reviewConfigMapAccess(ctx context.Context, namespace, account string) ([]string, error) {
	var missing []string
	for _, verb := range resources.HAConfigMapVerbs() {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + namespace + ":" + account,
			// A pod's token carries these groups too; rights bound to them count.
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "configmaps"},
		}}
		if err := r.Client.Create(ctx, sar); err != nil {
			return nil, fmt.Errorf("review %s on configmaps for ServiceAccount %s/%s: %w", verb, namespace, account, err)
		}
		if !sar.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	return missing, nil
}

// haPermissionsVerdict is the HighAvailabilityPermissions condition; false
// when the cluster should carry none (it does not use Kubernetes HA).
func haPermissionsVerdict(fc *v1.FlinkCluster, p *haPermissions) (verdict, bool) {
	if !resources.KubernetesHA(fc) {
		return verdict{}, false
	}
	verbs := strings.Join(resources.HAConfigMapVerbs(), ", ")
	account := fc.Spec.ServiceAccountName
	switch {
	case account == "":
		name := resources.HighAvailabilityName(fc)
		return verdict{metav1.ConditionTrue, "OperatorManaged",
			fmt.Sprintf("The pods run as ServiceAccount %s, bound to Role %s, which may %s ConfigMaps", name, name, verbs)}, true
	case p == nil:
		return verdict{metav1.ConditionUnknown, "NotReviewed", fmt.Sprintf("The rights of ServiceAccount %s are not reviewed yet", account)}, true
	case p.err != nil:
		return verdict{metav1.ConditionUnknown, "ReviewFailed", fmt.Sprintf("Cannot review the rights of ServiceAccount %s: %v", account, p.err)}, true
	case len(p.missing) > 0:
		return verdict{metav1.ConditionFalse, "MissingPermissions",
			fmt.Sprintf("ServiceAccount %s may not %s ConfigMaps in namespace %s; Flink's Kubernetes HA services need %s",
				account, strings.Join(p.missing, ", "), fc.Namespace, verbs)}, true
	}
	return verdict{metav1.ConditionTrue, "PermissionsGranted", fmt.Sprintf("ServiceAccount %s may %s ConfigMaps", account, verbs)}, true
}

// soonest is the earlier of two requeue delays, zero meaning none.
func soonest(a, b time.Duration) time.Duration {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
