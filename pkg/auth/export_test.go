//go:build integration

package auth

import "time"

// SetClock replaces the authenticator's clock (cache expiry) in tests.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }
