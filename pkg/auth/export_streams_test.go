package auth

// SetMaxAnonymous lowers MaxAnonymousStreams for one limiter in tests.
func (l *StreamLimiter) SetMaxAnonymous(n int) { l.maxAnonymous = n }
