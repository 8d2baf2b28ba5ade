package worker

import (
	"errors"
	"time"
)

// permanentError marks a handler error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps a handler error so that the todo is dead-lettered (Fail
// with dead_letter) instead of retried. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// retryAfterError asks for a specific delay before the next attempt.
type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter wraps a handler error so that the todo is failed with
// retry_after = d (clamped to 0–30 days) instead of the server's exponential
// backoff. RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, delay: min(max(d, 0), maxRetryAfter)}
}

// maxRetryAfter is FailRequest.retry_after's upper bound.
const maxRetryAfter = 30 * 24 * time.Hour

// IsPermanent reports whether err (or an error it wraps) was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// retryDelay returns the delay requested with RetryAfter, if any.
func retryDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.delay, true
	}
	return 0, false
}
