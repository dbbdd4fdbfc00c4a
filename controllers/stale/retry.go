package stale

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// RetryOn is how a reconciler returns after a failed write: a conflict
// (its cache was stale, or someone wrote first) becomes a quiet requeue
// after RetryAfter; any other error goes to the controller's rate-limited
// retry.
func RetryOn(ctx context.Context, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("conflict, requeueing", "error", err.Error())
		return ctrl.Result{RequeueAfter: RetryAfter}, nil
	}
	return ctrl.Result{}, err
}
