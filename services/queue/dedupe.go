package queue

import (
	"time"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Bounds of EnqueueRequest.dedupe_window (also protovalidate rules, checked
// again here for in-process callers).
const (
	minDedupeWindow = time.Second
	maxDedupeWindow = 30 * 24 * time.Hour
)

// dedupeScope resolves a request's dedupe_scope and dedupe_window: the
// window is required for WINDOW and forbidden otherwise, and a scope other
// than RETENTION needs a dedupe_key to scope.
func dedupeScope(prefix string, r *queuev1.EnqueueRequest) (string, time.Duration, error) {
	var scope string
	switch r.GetDedupeScope() {
	case queuev1.DedupeScope_DEDUPE_SCOPE_UNSPECIFIED, queuev1.DedupeScope_DEDUPE_SCOPE_RETENTION:
		scope = store.ScopeRetention
	case queuev1.DedupeScope_DEDUPE_SCOPE_LIVE:
		scope = store.ScopeLive
	case queuev1.DedupeScope_DEDUPE_SCOPE_WINDOW:
		scope = store.ScopeWindow
	default:
		return "", 0, invalid(prefix+"dedupe_scope", "must be RETENTION, LIVE or WINDOW")
	}
	if scope != store.ScopeRetention && r.GetDedupeKey() == "" {
		return "", 0, invalid(prefix+"dedupe_key", "is required when dedupe_scope is LIVE or WINDOW")
	}
	w := r.GetDedupeWindow()
	if scope != store.ScopeWindow {
		if w != nil {
			return "", 0, invalid(prefix+"dedupe_window", "is allowed only when dedupe_scope is WINDOW")
		}
		return scope, 0, nil
	}
	if w == nil {
		return "", 0, invalid(prefix+"dedupe_window", "is required when dedupe_scope is WINDOW")
	}
	if w.CheckValid() != nil || w.AsDuration() < minDedupeWindow || w.AsDuration() > maxDedupeWindow {
		return "", 0, invalid(prefix+"dedupe_window", "must be between 1s and 720h (30 days)")
	}
	return scope, w.AsDuration(), nil
}
