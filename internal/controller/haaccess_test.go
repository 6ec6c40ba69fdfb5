package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// TestHAPermissionsCondition computes the status of clusters in each HA
// situation and checks the HighAvailabilityPermissions condition.
func TestHAPermissionsCondition(t *testing.T) {
	cluster := func(mode v1.HighAvailabilityMode, account string) *v1.FlinkCluster {
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "team-a", Generation: 2}}
		fc.Spec = v1.FlinkClusterSpec{Version: "1.19.1", ServiceAccountName: account, TaskManager: v1.TaskManagerSpec{Replicas: 1}}
		if mode != "" {
			fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: mode}
		}
		return fc
	}
	for _, tc := range []struct {
		name       string
		fc         *v1.FlinkCluster
		review     *haPermissions
		want       metav1.ConditionStatus // empty: no condition
		reason     string
		inMessages []string
	}{
		{"no HA", cluster("", ""), nil, "", "", nil},
		{"zookeeper with an account", cluster(v1.HighAvailabilityZookeeper, "flink"), nil, "", "", nil},
		{"operator's account", cluster(v1.HighAvailabilityKubernetes, ""), nil, metav1.ConditionTrue, "OperatorManaged", []string{"demo-ha"}},
		{"user's account granted", cluster(v1.HighAvailabilityKubernetes, "flink"), &haPermissions{account: "flink"}, metav1.ConditionTrue, "PermissionsGranted", []string{"flink"}},
		{"user's account lacking verbs", cluster(v1.HighAvailabilityKubernetes, "flink"), &haPermissions{account: "flink", missing: []string{"patch", "deletecollection"}},
			metav1.ConditionFalse, "MissingPermissions", []string{"ServiceAccount flink may not patch, deletecollection ConfigMaps in namespace team-a"}},
		{"review failed", cluster(v1.HighAvailabilityKubernetes, "flink"), &haPermissions{account: "flink", err: errors.New("forbidden")},
			metav1.ConditionUnknown, "ReviewFailed", []string{"forbidden"}},
		{"not reviewed", cluster(v1.HighAvailabilityKubernetes, "flink"), nil, metav1.ConditionUnknown, "NotReviewed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(tc.fc, &tc.fc.Status, observed{haPermissions: tc.review}, metav1.NewTime(time.Unix(1000, 0)))
			c := meta.FindStatusCondition(st.Conditions, v1.ConditionHighAvailabilityPermissions)
			if tc.want == "" {
				if c != nil {
					t.Fatalf("condition = %+v, want none", c)
				}
				return
			}
			if c == nil || c.Status != tc.want || c.Reason != tc.reason || c.ObservedGeneration != 2 {
				t.Fatalf("condition = %+v, want %s/%s at generation 2", c, tc.want, tc.reason)
			}
			for _, s := range tc.inMessages {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
		})
	}

	// A cluster that leaves Kubernetes HA loses the condition.
	fc := cluster(v1.HighAvailabilityKubernetes, "")
	fc.Status = computeStatus(fc, &fc.Status, observed{}, metav1.NewTime(time.Unix(1000, 0)))
	fc.Spec.HighAvailability.Mode = v1.HighAvailabilityNone
	if c := meta.FindStatusCondition(computeStatus(fc, &fc.Status, observed{}, metav1.NewTime(time.Unix(2000, 0))).Conditions, v1.ConditionHighAvailabilityPermissions); c != nil {
		t.Errorf("condition after HA none = %+v, want none", c)
	}
}

// TestHAReviewDue: a review stands until the account or the generation
// changes, ten minutes when every right was there, one minute otherwise.
func TestHAReviewDue(t *testing.T) {
	at := time.Unix(1000, 0)
	granted := &haPermissions{account: "flink", generation: 3, reviewedAt: at}
	missing := &haPermissions{account: "flink", generation: 3, reviewedAt: at, missing: []string{"watch"}}
	failed := &haPermissions{account: "flink", generation: 3, reviewedAt: at, err: errors.New("timeout")}
	for _, tc := range []struct {
		name       string
		last       *haPermissions
		account    string
		generation int64
		now        time.Time
		want       time.Duration
	}{
		{"never reviewed", nil, "flink", 3, at, 0},
		{"granted, just now", granted, "flink", 3, at.Add(time.Second), 10*time.Minute - time.Second},
		{"granted, expired", granted, "flink", 3, at.Add(10 * time.Minute), 0},
		{"missing, half a minute ago", missing, "flink", 3, at.Add(30 * time.Second), 30 * time.Second},
		{"failed, a minute ago", failed, "flink", 3, at.Add(time.Minute), 0},
		{"spec changed", granted, "flink", 4, at.Add(time.Second), 0},
		{"another account", granted, "other", 3, at.Add(time.Second), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := haReviewDue(tc.last, tc.account, tc.generation, tc.now)
			if tc.want == 0 && got > 0 || tc.want > 0 && got != tc.want {
				t.Errorf("haReviewDue = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSoonest(t *testing.T) {
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, 0, 0}, {0, time.Second, time.Second}, {time.Second, 0, time.Second},
		{time.Second, time.Minute, time.Second}, {time.Minute, time.Second, time.Second},
	} {
		if got := soonest(tc.a, tc.b); got != tc.want {
			t.Errorf("soonest(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}
