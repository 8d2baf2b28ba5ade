package cluster

import (
	"runtime"
	"time"
)

// runtimeStats are the seed's Go runtime figures. ReadMemStats stops the world
// briefly; once per heartbeat tick is negligible.
func runtimeStats(started time.Time) map[string]any {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return map[string]any{
		"goroutines":  runtime.NumGoroutine(),
		"heap_alloc":  m.HeapAlloc,
		"heap_sys":    m.HeapSys,
		"gc_cycles":   m.NumGC,
		"gc_pause_ns": m.PauseNs[(m.NumGC+255)%256],
		"uptime_sec":  time.Since(started).Seconds(),
	}
}
