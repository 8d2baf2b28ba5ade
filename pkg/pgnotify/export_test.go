//go:build integration

package pgnotify

import "time"

// ListenerPID is the backend pid of n's listen connection while it is
// connected (0 otherwise), so a test can terminate it.
func ListenerPID(n *Notifier) uint32 { return n.pid.Load() }

// SetClock replaces n's clock; call it before Start and before any mark.
// Kick wakes the flusher, as a mark would, after the test moved the clock.
func SetClock(n *Notifier, now func() time.Time) { n.out.now = now }

// Kick wakes n's flusher.
func Kick(n *Notifier) { n.out.wake() }
