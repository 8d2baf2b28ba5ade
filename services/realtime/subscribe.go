package realtime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
)

// Subscribe streams events from the requested channels:
//
//  1. it registers with the hub, which hands back the durable high-water
//     mark C (every durable event ≤ C has been fanned out before this
//     subscriber existed; every one above C will reach its buffer);
//  2. with after_id < C it replays after_id < id ≤ C from the table, page by
//     page, while live events collect in its buffer (after_id 0 means the
//     table's newest id when the call starts: nothing published before);
//  3. then it sends live events, skipping durable ones it already sent (a
//     client may resume from an id this node has not reached yet), with a
//     Keepalive after Options.Keepalive of silence.
//
// A subscriber whose buffer fills (it reads slower than events arrive) is
// ended with RESOURCE_EXHAUSTED naming the id to resume from; the fan-out
// never waits for it. A stored event that cannot be rendered (a row written
// around Publish's limits) is skipped with a Warn, live and on replay alike,
// so it never ends a stream, nor every resume after it.
func (s *Server) Subscribe(req *realtimev1.SubscribeRequest, stream grpc.ServerStreamingServer[realtimev1.SubscribeResponse]) error {
	ctx := stream.Context()
	c, err := caller(ctx)
	if err != nil {
		return err
	}
	channels, err := subscribeChannels(req)
	if err != nil {
		return err
	}
	if err := s.awaitReady(ctx); err != nil {
		return err
	}
	last := req.GetAfterId()
	if last == 0 {
		// "Only events published after the subscription starts": the start
		// is the table's newest id now, read BEFORE registering. This node's
		// cursor may trail it (another node's publish not read yet), and
		// whatever commits between this read and the registration is at or
		// below the cursor, so the replay below sends it.
		if last, err = s.store.MaxID(ctx); err != nil {
			return err
		}
	}
	sub := newSubscriber(c.human, c.member, channels, req.GetIncludeEphemeral(), s.opts.Buffer)
	cursor := s.hub.add(sub)
	defer s.hub.remove(sub)
	s.joined(ctx, sub)
	defer s.left(sub)

	w := newSender(stream, sub, req.GetMaxBatch(), last)
	if last < cursor {
		if err := s.replay(w, cursor); err != nil {
			return err
		}
	}
	w.last = max(w.last, cursor)

	keepalive := time.NewTimer(s.opts.Keepalive)
	defer keepalive.Stop()
	for {
		select {
		case ob := <-sub.out:
			if err := w.sendQueued(ob); err != nil {
				return err
			}
		case <-sub.cut:
			return behind(w.last)
		case <-keepalive.C:
			ka := &realtimev1.Keepalive{SentAt: timestamppb.Now()}
			if err := stream.Send(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Keepalive{Keepalive: ka}}); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		keepalive.Reset(s.opts.Keepalive)
	}
}

// readyTimeout bounds how long a Subscribe waits for a node whose reader
// has not started (Postgres away at boot) before answering UNAVAILABLE.
const readyTimeout = 10 * time.Second

func (s *Server) awaitReady(ctx context.Context) error {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-s.ready:
		return nil
	case <-t.C:
		return apierr.Unavailable("realtime is starting (waiting for the database); retry")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// replay sends the stored events after w.last up to upto, batched as
// live events are, and leaves w.last at upto when it is done.
func (s *Server) replay(w *sender, upto int64) error {
	ctx := w.stream.Context()
	sub := w.sub
	for {
		evs, err := s.store.Replay(ctx, sub.human, sub.channels, w.last, upto, s.opts.ReplayPage)
		if err != nil {
			return err
		}
		sub.metrics.Replayed(len(evs))
		for _, e := range evs {
			d, err := durableEvent(e)
			if err != nil {
				// Skipped as the live fan-out skips it: failing the stream
				// would fail its resume from after_id too, forever.
				undeliverable(s.log, e, err)
			} else if err := w.addParts(d.part); err != nil {
				return err
			}
			w.last = e.ID
		}
		if err := w.flush(); err != nil {
			return err
		}
		select {
		case <-sub.cut: // live events overflowed while replaying
			return behind(w.last)
		default:
		}
		if len(evs) < s.opts.ReplayPage {
			w.last = upto
			return nil
		}
	}
}

// behind is the error that ends a subscriber that fell too far behind.
func behind(last int64) error {
	return apierr.ResourceExhausted("subscriber fell too far behind and was disconnected; resubscribe with after_id=%d to resume", last)
}

// subscribeChannels checks the channel list (protovalidate does too).
func subscribeChannels(req *realtimev1.SubscribeRequest) ([]string, error) {
	chs := req.GetChannels()
	if len(chs) == 0 || len(chs) > 100 {
		return nil, invalid("channels", "must hold 1 to 100 channel names")
	}
	if req.GetAfterId() < 0 {
		return nil, invalid("after_id", "must be ≥ 0")
	}
	if req.GetMaxBatch() > MaxBatch {
		return nil, invalid("max_batch", fmt.Sprintf("must be at most %d", MaxBatch))
	}
	seen := make(map[string]struct{}, len(chs))
	for i, ch := range chs {
		if !channelName.MatchString(ch) {
			return nil, invalid(fmt.Sprintf("channels[%d]", i), "must match ^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$")
		}
		if _, dup := seen[ch]; dup {
			return nil, invalid(fmt.Sprintf("channels[%d]", i), "is listed twice")
		}
		seen[ch] = struct{}{}
	}
	return append([]string(nil), chs...), nil
}
