package workload

import (
	"context"
	"errors"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Error kinds, as churn reports them.
const (
	ErrTooManyRequests = "429"
	ErrClient          = "4xx"
	ErrServer          = "5xx"
	ErrTimeout         = "timeout"
	ErrConnection      = "connection"
	ErrOther           = "other"
)

// Classify names the kind of a failed request.
func Classify(err error) string {
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return ErrTimeout
	case apierrors.IsTooManyRequests(err):
		return ErrTooManyRequests
	case errors.As(err, &status):
		code := status.Status().Code
		switch {
		case code >= 500:
			return ErrServer
		case code >= 400:
			return ErrClient
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ErrTimeout
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return ErrConnection
	}
	return ErrOther
}
