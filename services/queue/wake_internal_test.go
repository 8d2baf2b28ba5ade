package queue

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestWakeNSkipsWaitersAlreadyWoken: a waiter that already holds a pending
// wake-up does not count, so every new todo reaches a waiter that will
// claim for it. (Counting it lost wake-ups: map order made the failure
// random, so the check runs many times.)
func TestWakeNSkipsWaitersAlreadyWoken(t *testing.T) {
	t.Parallel()
	for range 50 {
		w := newWaiters()
		k := queueKey{human: uuid.New(), queue: "q"}
		busy, cancelBusy := w.subscribe(k)
		idle, cancelIdle := w.subscribe(k)
		busy.ch <- struct{}{} // woken for an earlier todo, not yet claiming
		w.wakeN(k, 1, nil)
		require.Len(t, idle.ch, 1, "the new todo's wake-up went to the idle waiter")
		cancelBusy()
		cancelIdle()
	}
}
