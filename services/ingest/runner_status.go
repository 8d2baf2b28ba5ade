package ingest

import "time"

// How often a running adapter's state reaches its row.
const (
	// defaultStatusGap: a change of state (a new reason, or healthy again)
	// is written at most this often, however fast steps fail.
	defaultStatusGap = 2 * time.Second
	// statusRefresh: an unchanged state is written again this often, so
	// last_polled_at shows the adapter is still running.
	statusRefresh = time.Minute
)

// statusWriter turns an adapter's step outcomes (redisstream's OnStatus:
// "" healthy, else a client-safe reason) into writes of its row's
// last_error and last_polled_at, rate limited: a tight failure loop, or an
// adapter flapping between failure and success, writes at most once per
// gap, and a steady state once per statusRefresh. A change that comes
// within the gap is written with a later outcome (steps report at least
// every few seconds while the adapter runs). It is used from the adapter's
// goroutine only.
type statusWriter struct {
	write func(reason string)
	gap   time.Duration
	now   func() time.Time

	wrote  bool
	last   string
	lastAt time.Time
}

func newStatusWriter(write func(reason string), gap time.Duration) *statusWriter {
	return &statusWriter{write: write, gap: gap, now: time.Now}
}

// report is told a step's outcome; it writes when the state is due.
func (w *statusWriter) report(reason string) {
	now := w.now()
	if w.wrote {
		since := now.Sub(w.lastAt)
		if since < w.gap || (reason == w.last && since < statusRefresh) {
			return
		}
	}
	w.wrote, w.last, w.lastAt = true, reason, now
	w.write(reason)
}
