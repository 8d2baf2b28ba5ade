package bench

import "time"

// rtTally is one subscriber's bookkeeping of the benchmark's data events:
// which (publisher, sequence) pairs it saw, how often, and the
// publish→deliver latency of those sent in the measured window. One
// goroutine (the subscriber's receive loop) writes it; it is read once that
// goroutine has ended.
type rtTally struct {
	// seen[p] is a bitset over publisher p's sequence numbers.
	seen [][]uint64
	// distinct counts first deliveries; dups counts every delivery after
	// the first of the same (publisher, sequence).
	distinct, dups int64
	// lat holds deliver−send of first deliveries sent at or after the
	// measured window opened; measured counts them.
	lat      []time.Duration
	measured int64
	// lastMeasuredNs is when the last measured delivery arrived (UnixNano).
	lastMeasuredNs int64
}

func newRTTally(publishers int) *rtTally {
	return &rtTally{seen: make([][]uint64, publishers)}
}

// record notes a delivery of publisher pub's event seq, sent at sentNs and
// received at recvNs (both UnixNano, one process's clock). Events sent
// before measureFromNs (the warmup) count for loss and duplicates only.
// It reports false for a (pub, seq) outside what any publisher could have
// sent, which the caller counts as malformed.
func (t *rtTally) record(pub, seq int, sentNs, recvNs, measureFromNs int64) bool {
	if pub < 0 || pub >= len(t.seen) || seq < 0 {
		return false
	}
	word, bit := seq/64, uint64(1)<<(seq%64)
	if word >= len(t.seen[pub]) {
		t.seen[pub] = append(t.seen[pub], make([]uint64, word+1-len(t.seen[pub]))...)
	}
	if t.seen[pub][word]&bit != 0 {
		t.dups++
		return true
	}
	t.seen[pub][word] |= bit
	t.distinct++
	if sentNs >= measureFromNs {
		t.lat = append(t.lat, time.Duration(recvNs-sentNs))
		t.measured++
		t.lastMeasuredNs = max(t.lastMeasuredNs, recvNs)
	}
	return true
}

// has reports whether publisher pub's event seq was delivered.
func (t *rtTally) has(pub, seq int) bool {
	if pub < 0 || pub >= len(t.seen) || seq < 0 || seq/64 >= len(t.seen[pub]) {
		return false
	}
	return t.seen[pub][seq/64]&(1<<(seq%64)) != 0
}

// rtPublished is what one publisher sent: sequence numbers 0…sent−1, of
// which the ones in failed got an error back from Publish (the server may or
// may not have taken them, so they are expected nowhere).
type rtPublished struct {
	sent   int
	failed map[int]bool
}

// ok is the number of events Publish acknowledged.
func (p rtPublished) ok() int { return p.sent - len(p.failed) }

// lost counts acknowledged events this subscriber never received.
func (t *rtTally) lost(pubs []rtPublished) int64 {
	var n int64
	for p, pub := range pubs {
		for seq := range pub.sent {
			if !pub.failed[seq] && !t.has(p, seq) {
				n++
			}
		}
	}
	return n
}
