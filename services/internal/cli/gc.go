package cli

import "runtime/debug"

// defaultGCPercent is the collector's target for `serve` and `bench` when the
// operator has not set GOGC. A node's live heap is small (tens of MB) but it
// allocates fast on the queue's hot path (one protobuf message and a few
// buffers per todo per call); at Go's default of 100 the collector took a
// sixth of a node's CPU under `bench queue`, and 400 raised throughput by
// about 30% for a heap that stays around a hundred MB. GOMEMLIMIT, when set,
// still caps it.
const defaultGCPercent = 400

// tuneGC applies defaultGCPercent unless GOGC is set (the runtime has
// already applied that one).
func tuneGC(lookup func(string) (string, bool)) {
	if _, ok := lookup("GOGC"); ok {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
}
