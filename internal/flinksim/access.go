package flinksim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// haConfigMapVerbs are what a JobManager's Kubernetes HA services do with
// ConfigMaps before it can lead: KubernetesLeaderElector (fabric8's
// LeaderElector with a ConfigMapLock) gets, creates and updates the
// leader ConfigMap, and KubernetesConfigMapSharedInformer lists and
// watches it. Flink's "Kubernetes HA Services" documentation grants
// exactly these plus delete, which only the cleanup of a cluster that ends
// for good uses.
var haConfigMapVerbs = []string{"get", "list", "watch", "create", "update"}

// haRetrievalVerbs are what a TaskManager's Kubernetes HA services do to
// find the leaders (KubernetesLeaderRetrievalDriver: a shared informer on
// the leader ConfigMap, which lists, watches and gets it).
var haRetrievalVerbs = []string{"get", "list", "watch"}

// accessReviewer asks the API server, with a SubjectAccessReview, whether
// a ServiceAccount may do what Flink's fabric8 client does, as the API
// server would answer the client itself; answers are kept for a while per
// namespace and account.
type accessReviewer struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	answers map[string]accessAnswer
}

type accessAnswer struct {
	refusal string
	at      time.Time
}

func newAccessReviewer(cfg *rest.Config, ttl time.Duration) (*accessReviewer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Flink REST simulator: a client for access reviews: %w", err)
	}
	return &accessReviewer{client: cs, ttl: ttl, now: time.Now, answers: map[string]accessAnswer{}}, nil
}

// review is the API server's refusal of the first verb the account may
// not use on ConfigMaps in namespace, as fabric8 reports a 403; "" when it
// may use them all. sa is namespace/name. A review that fails is a
// refusal too: the client could not have been sure either.
func (a *accessReviewer) review(ctx context.Context, namespace, sa string, verbs []string) string {
	key := namespace + "\x00" + sa + "\x00" + strings.Join(verbs, ",")
	a.mu.Lock()
	if ans, ok := a.answers[key]; ok && a.now().Sub(ans.at) < a.ttl {
		a.mu.Unlock()
		return ans.refusal
	}
	a.mu.Unlock()
	saNS, saName, _ := strings.Cut(sa, "/")
	user := "system:serviceaccount:" + saNS + ":" + saName
	refusal := ""
	for _, verb := range verbs {
		r, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace, Verb: verb, Resource: "configmaps",
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			refusal = fmt.Sprintf("io.fabric8.kubernetes.client.KubernetesClientException: %s configmaps in namespace %s: %v", verb, namespace, err)
			break
		}
		if !r.Status.Allowed {
			refusal = fmt.Sprintf("io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: %s configmaps in namespace %s. Message: Forbidden! User %s doesn't have permission. configmaps is forbidden: User %q cannot %s resource \"configmaps\" in API group \"\" in the namespace %q.",
				strings.ToUpper(verb), namespace, user, user, verb, namespace)
			break
		}
	}
	a.mu.Lock()
	a.answers[key] = accessAnswer{refusal: refusal, at: a.now()}
	a.mu.Unlock()
	return refusal
}
