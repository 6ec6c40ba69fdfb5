package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestRequeueOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "data.example.com", Resource: "flinkclusters"}, "fc",
		errors.New("the object has been modified"))
	other := errors.New("apply ConfigMap fc-config: forbidden")
	for _, tc := range []struct {
		name    string
		res     ctrl.Result
		err     error
		wantRes ctrl.Result
		wantErr error
	}{
		{"a conflict looks again soon, without an error", ctrl.Result{}, conflict, ctrl.Result{RequeueAfter: staleRetry}, nil},
		{"a wrapped conflict too", ctrl.Result{}, fmt.Errorf("write status: %w", conflict), ctrl.Result{RequeueAfter: staleRetry}, nil},
		{"another error stays an error", ctrl.Result{}, other, ctrl.Result{}, other},
		{"no error keeps the result", ctrl.Result{RequeueAfter: time.Minute}, nil, ctrl.Result{RequeueAfter: time.Minute}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := requeueOnConflict(tc.res, tc.err)
			if res != tc.wantRes || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("requeueOnConflict(%v, %v) = %v, %v; want %v, %v", tc.res, tc.err, res, err, tc.wantRes, tc.wantErr)
			}
		})
	}
}
