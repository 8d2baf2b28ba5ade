package queue

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// maxLimit is the largest max_running / key_max_running SetQueueLimits
// accepts (the CHECK on queue_controls says the same).
const maxLimit = 1_000_000

// SetQueueLimits sets a queue's concurrency limits (0 = none). From the
// moment it returns, every claim on every node honours them
// (TodoClaimLimited); the counters they are checked against have been
// recounted from the todos (store.SetLimits). Claims waiting on the queue
// are woken (a raised limit may let them take work at once), and
// queue.limits is emitted on sys:queue:<queue>.
func (s *Server) SetQueueLimits(ctx context.Context, req *queuev1.SetQueueLimitsRequest) (*queuev1.SetQueueLimitsResponse, error) {
	c, err := callerOfQueue(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	l := store.Limits{
		MaxRunning: req.GetMaxRunning(), KeyMaxRunning: req.GetKeyMaxRunning(),
		Rate: req.GetRatePerSecond(), RateBurst: req.GetRateBurst(), KeyRate: req.GetKeyRatePerSecond(), KeyRateBurst: req.GetKeyRateBurst(),
	}
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"max_running", l.MaxRunning < 0 || l.MaxRunning > maxLimit},
		{"key_max_running", l.KeyMaxRunning < 0 || l.KeyMaxRunning > maxLimit},
		{"rate_burst", l.RateBurst < 0 || l.RateBurst > maxLimit},
		{"key_rate_burst", l.KeyRateBurst < 0 || l.KeyRateBurst > maxLimit},
	} {
		if f.bad {
			return nil, invalid(f.name, "must be between 0 (none) and 1000000")
		}
	}
	if !rateOK(l.Rate) {
		return nil, invalid("rate_per_second", rateRange("none"))
	}
	if !rateOK(l.KeyRate) {
		return nil, invalid("key_rate_per_second", rateRange("none"))
	}
	if l.KeyPatterns, err = keyPatterns(req.GetKeyPatterns()); err != nil {
		return nil, err
	}
	ctl, err := s.store.SetLimits(ctx, c, req.GetQueue(), l)
	if err != nil {
		return nil, err
	}
	state := "unlimited"
	if ctl.Limits.Limited() {
		state = "limited"
	}
	s.todos.emitEvent(TodoEvent{Kind: EventLimits, HumanID: c.HumanID, Queue: req.GetQueue(), State: state})
	s.todos.resumed(c.HumanID, req.GetQueue())
	return &queuev1.SetQueueLimitsResponse{Control: controlProto(req.GetQueue(), ctl)}, nil
}

// limitsProto renders a queue's limits; nil when it has none.
func limitsProto(l store.Limits, running int32, at *time.Time) *queuev1.QueueLimits {
	if !l.Limited() {
		return nil
	}
	out := &queuev1.QueueLimits{
		MaxRunning: l.MaxRunning, KeyMaxRunning: l.KeyMaxRunning, Running: running,
		RatePerSecond: l.Rate, RateBurst: l.RateBurst, KeyRatePerSecond: l.KeyRate, KeyRateBurst: l.KeyRateBurst,
	}
	for _, p := range l.KeyPatterns {
		out.KeyPatterns = append(out.KeyPatterns, &queuev1.KeyPattern{
			Pattern: p.Glob, MaxRunning: p.MaxRunning, RatePerSecond: p.Rate, RateBurst: p.RateBurst,
		})
	}
	if at != nil {
		out.UpdatedAt = timestamppb.New(*at)
	}
	return out
}

// rateOK reports whether r is a rate SetQueueLimits accepts: 0 (none) or
// within [store.MinRate, store.MaxRate]. NaN and the infinities, which
// protojson accepts as "NaN" and "Infinity", are not.
func rateOK(r float64) bool {
	return r == 0 || (r >= store.MinRate && r <= store.MaxRate)
}

// rateRange is the refusal of a rate out of range; zero names what 0 means.
func rateRange(zero string) string {
	return "must be 0 (" + zero + ") or from 1/86400 (one claim a day, 0.0000115741) to 1000000 claims per second"
}

// RepairOnce recounts the running counters of the limited queues that are
// due (store.RepairDue: not since 2 s after their limits changed, or not
// for Options.RepairInterval) and returns how many were wrong;
// every node runs it on the reaper's tick, one node per queue at a time.
// A queue found holding a rate out of bounds (stored before SetQueueLimits
// refused such rates; claims read it clamped) is reported once per node.
func (s *Server) RepairOnce(ctx context.Context) (int64, error) {
	n, outOfBounds, err := s.store.RepairDue(ctx, s.opts.RepairInterval, repairBatch)
	if n > 0 {
		s.log.Warn("queue limit counters repaired", zap.Int64("counters", n))
	}
	for _, q := range outOfBounds {
		if _, warned := s.rateWarned.LoadOrStore(queueKey{human: q.HumanID, queue: q.Queue}, true); !warned {
			s.log.Warn("queue has a rate limit out of bounds, stored before they were checked: claims use the nearest bound (one claim a day at least, 1,000,000 a second at most); set its limits again",
				zap.Stringer("human", q.HumanID), zap.String("queue", q.Queue))
		}
	}
	return n, err
}

// repairBatch is how many queues one repair pass checks at most.
const repairBatch = 100

// maxKeyPatterns is how many key patterns a queue may have.
const maxKeyPatterns = 100

// keyPatterns checks SetQueueLimitsRequest.key_patterns (protovalidate
// checks them too; the handler must be safe without it).
func keyPatterns(in []*queuev1.KeyPattern) ([]store.KeyPattern, error) {
	if len(in) > maxKeyPatterns {
		return nil, invalid("key_patterns", "at most 100")
	}
	out := make([]store.KeyPattern, len(in))
	for i, p := range in {
		field := func(f string) string { return fmt.Sprintf("key_patterns[%d].%s", i, f) }
		switch {
		case p.GetPattern() == "" || utf8.RuneCountInString(p.GetPattern()) > 255 || textcheck.Check(p.GetPattern()) != nil:
			return nil, invalid(field("pattern"), "must be 1 to 255 characters of text")
		case p.GetMaxRunning() < 0 || p.GetMaxRunning() > maxLimit:
			return nil, invalid(field("max_running"), "must be between 0 (the default) and 1000000")
		case !rateOK(p.GetRatePerSecond()):
			return nil, invalid(field("rate_per_second"), rateRange("the default"))
		case p.GetRateBurst() < 0 || p.GetRateBurst() > maxLimit:
			return nil, invalid(field("rate_burst"), "must be between 0 (the default) and 1000000")
		}
		out[i] = store.KeyPattern{Glob: p.GetPattern(), MaxRunning: p.GetMaxRunning(), Rate: p.GetRatePerSecond(), RateBurst: p.GetRateBurst()}
	}
	return out, nil
}
