package operator

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsAuth does what controller-runtime's
// filters.WithAuthenticationAndAuthorization does (kubebuilder's
// scaffold), without linking k8s.io/apiserver into the production binary:
// a request's bearer token is authenticated by a TokenReview, and the
// user it names must be allowed the request's verb on its non-resource
// URL by a SubjectAccessReview. Answers are kept for a minute, as the
// apiserver's delegating authenticator and authorizer cache them, so a
// scrape every few seconds costs two reviews a minute.
func metricsAuth(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	k, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	reviews := &reviewCache{ttl: time.Minute, entries: map[[32]byte]review{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
			if !ok || token == "" {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			verb, path := strings.ToLower(req.Method), req.URL.Path
			key := sha256.Sum256([]byte(verb + "\x00" + path + "\x00" + token))
			r, ok := reviews.get(key)
			if !ok {
				var err error
				if r, err = reviewRequest(req, k, token, verb, path); err != nil {
					log.Error(err, "Reviewing a metrics request")
					http.Error(w, "Authentication or authorization failed", http.StatusInternalServerError)
					return
				}
				reviews.put(key, r)
			}
			if r.status != http.StatusOK {
				http.Error(w, http.StatusText(r.status), r.status)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}, nil
}

// review is the outcome of one token on one verb and path.
type review struct {
	status  int
	expires time.Time
}

// reviewRequest asks the API server who the token is and whether they may.
func reviewRequest(req *http.Request, k kubernetes.Interface, token, verb, path string) (review, error) {
	ctx := req.Context()
	tr, err := k.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return review{}, err
	}
	if !tr.Status.Authenticated {
		return review{status: http.StatusUnauthorized}, nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := k.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}},
	}, metav1.CreateOptions{})
	if err != nil {
		return review{}, err
	}
	if !sar.Status.Allowed {
		return review{status: http.StatusForbidden}, nil
	}
	return review{status: http.StatusOK}, nil
}

// reviewCache holds reviews by a hash of the token, verb and path, never
// the token itself; bounded, so unknown tokens cannot grow it without end.
type reviewCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[[32]byte]review
}

const maxCachedReviews = 1024

func (c *reviewCache) get(key [32]byte) (review, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.entries[key]
	if !ok || time.Now().After(r.expires) {
		return review{}, false
	}
	return r, true
}

func (c *reviewCache) put(key [32]byte, r review) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedReviews {
		clear(c.entries)
	}
	r.expires = time.Now().Add(c.ttl)
	c.entries[key] = r
}
