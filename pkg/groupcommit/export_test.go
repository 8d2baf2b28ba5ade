package groupcommit

// Clock is the clock a Batcher measures its window on, for the tests' fake.
type Clock = clock

// SetClock makes b measure its window on c. Call it before Start and
// before any call.
func SetClock[K comparable, I, R any](b *Batcher[K, I, R], c Clock) { b.clock = c }

// Queued is how many calls wait in b's queue (not yet sent).
func Queued[K comparable, I, R any](b *Batcher[K, I, R]) int { return b.Queued() }
