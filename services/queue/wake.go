package queue

import (
	"strings"
	"sync"

	"github.com/google/uuid"
)

// queueKey names a queue: queue names are scoped to their tenant.
type queueKey struct {
	human uuid.UUID
	queue string
}

// payload is the key as sent through pg_notify: "<human_id>:<queue>". Both
// parts are from fixed alphabets (uuid, ^[a-z0-9][a-z0-9._-]{0,62}$), so ':'
// separates them unambiguously and it stays far below NOTIFY's 8000 bytes.
func (k queueKey) payload() string { return k.human.String() + ":" + k.queue }

// parseQueueKey reverses payload; ok is false for anything else.
func parseQueueKey(p string) (queueKey, bool) {
	h, q, ok := strings.Cut(p, ":")
	if !ok || q == "" {
		return queueKey{}, false
	}
	id, err := uuid.Parse(h)
	if err != nil {
		return queueKey{}, false
	}
	return queueKey{human: id, queue: q}, true
}

// waiters is this process's registry of long-poll claims waiting for work,
// by queue. A waiter's channel holds one pending wake-up (buffer 1), so a
// wake-up that arrives while its Claim is busy querying is kept, not lost:
// Claim subscribes before its first attempt, and any enqueue that commits
// after that attempt's snapshot leaves a wake-up behind.
type waiters struct {
	mu sync.Mutex
	m  map[queueKey]map[*waiter]struct{}
	// closing is closed at shutdown: waiting claims return empty-handed.
	closing   chan struct{}
	closeOnce sync.Once
}

type waiter struct{ ch chan struct{} }

func newWaiters() *waiters {
	return &waiters{m: map[queueKey]map[*waiter]struct{}{}, closing: make(chan struct{})}
}

// subscribe registers a waiter for k; cancel removes it.
func (w *waiters) subscribe(k queueKey) (wt *waiter, cancel func()) {
	wt = &waiter{ch: make(chan struct{}, 1)}
	w.mu.Lock()
	if w.m[k] == nil {
		w.m[k] = map[*waiter]struct{}{}
	}
	w.m[k][wt] = struct{}{}
	w.mu.Unlock()
	return wt, func() {
		w.mu.Lock()
		// A set is dropped only when empty, and wt is in it until now, so
		// w.m[k] is still the set wt was added to.
		cur := w.m[k]
		delete(cur, wt)
		if len(cur) == 0 {
			delete(w.m, k)
		}
		w.mu.Unlock()
	}
}

// wake signals every waiter of k without blocking.
func (w *waiters) wake(k queueKey) { w.wakeN(k, -1, nil) }

// wakeN gives a wake-up to up to n waiters of k (n < 0: all), skipping
// except. A waiter that already holds a pending wake-up does not count: it
// is already going to claim for an earlier todo, so counting it would leave
// this todo with nobody woken (two enqueues landing on the same waiter lost
// a wake-up, and a claim waited out its whole long poll). Waking only as
// many claims as there are new todos keeps one enqueue from sending every
// idle worker of the queue to the database at once.
func (w *waiters) wakeN(k queueKey, n int, except *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := range w.m[k] {
		if n == 0 {
			return
		}
		if wt == except {
			continue
		}
		select {
		case wt.ch <- struct{}{}:
			n--
		default: // already has a pending wake-up
		}
	}
}

// wakeAll signals every waiter: after the listen connection (re)connects,
// notifications sent while it was down are lost, so everyone re-checks.
func (w *waiters) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.m {
		for wt := range set {
			select {
			case wt.ch <- struct{}{}:
			default:
			}
		}
	}
}

// close makes every current and future waiting claim return (shutdown).
func (w *waiters) close() { w.closeOnce.Do(func() { close(w.closing) }) }

// count is the number of waiting claims.
func (w *waiters) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, set := range w.m {
		n += len(set)
	}
	return n
}

// Waiting is the number of long-poll Claims waiting for work on this node
// right now (a gauge for metrics, and a condition tests can poll).
func (s *Server) Waiting() int { return s.waiters.count() }
