package metrics

import "sync"

// capped hands out one pre-resolved value per label key, building at most
// max of them; every later key gets the shared overflow value. Lookups of a
// known key take no lock and allocate nothing.
type capped[K comparable, V any] struct {
	known    sync.Map // K → V
	mu       sync.Mutex
	n, max   int
	build    func(K) V
	overflow func() V
	other    V
	otherSet bool
}

func newCapped[K comparable, V any](max int, build func(K) V, overflow func() V) *capped[K, V] {
	return &capped[K, V]{max: max, build: build, overflow: overflow}
}

func (c *capped[K, V]) get(k K) V {
	if v, ok := c.known.Load(k); ok {
		return v.(V)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.known.Load(k); ok {
		return v.(V)
	}
	if c.n >= c.max {
		if !c.otherSet {
			c.other, c.otherSet = c.overflow(), true
		}
		return c.other
	}
	v := c.build(k)
	c.known.Store(k, v)
	c.n++
	return v
}
