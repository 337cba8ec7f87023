package inbound

import (
	"context"

	"github.com/errown/errown/internal/reqlog"
)

// CallerFault says that the error the request being served with ctx ends
// in, if any, is its caller's fault, whatever its code: an answer, not a
// failure of this service. Use it where a handler can only return a code
// errown counts as a failure (internal, say) for a request that was
// wrong: the dependency memory then does not learn that this service
// failed, so callers cannot push its edges toward fail-close by sending
// bad requests. It reports whether ctx belongs to a tracked request.
func CallerFault(ctx context.Context) bool {
	return mark(ctx, (*reqlog.Log).SetCallerFault)
}

// DoNotRetry asks that the caller not retry the request being served with
// ctx if it fails, as pushback: the error response then carries the
// no-retry header. It reports whether ctx belongs to a tracked request.
func DoNotRetry(ctx context.Context) bool {
	return mark(ctx, (*reqlog.Log).SetNoRetry)
}

// mark sets a flag of the request ctx belongs to, and reports whether it
// belongs to a tracked request.
func mark(ctx context.Context, set func(*reqlog.Log)) bool {
	log := reqlog.FromContext(ctx)
	if log == nil {
		return false
	}
	set(log)
	return true
}
