package bench

// The subscriber side of `bench realtime`: each stream reads raw frames,
// tallies the run's events and resumes a stream the node ended.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// overhead is the serialized size of a data payload with an empty pad.
func (b *rtBench) overhead() int {
	raw, _ := json.Marshal(map[string]any{
		rtKeyRun: b.run, rtKeyPub: b.cfg.publishers - 1, rtKeySeq: b.cfg.rate,
		rtKeySent: strconv.FormatInt(time.Now().UnixNano(), 10), rtKeyPad: "",
	})
	return len(raw)
}

// receive runs one subscription until sctx ends or the stream breaks.
func (b *rtBench) receive(sctx context.Context, s *rtSub) {
	// The stream is live once it has seen a probe from each of the first
	// len(addrs) publishers, which publish on every node.
	probers := min(len(b.pubs), len(b.cfg.addrs))
	probed := make([]bool, probers)
	left := probers
	// lastID is the last durable id seen: a stream the node ends because
	// this subscriber fell behind (RESOURCE_EXHAUSTED) or because it is
	// stopping (UNAVAILABLE) is resumed from it, as the contract tells
	// clients to; the replayed events count like live ones.
	var lastID int64
	var stream grpc.ServerStreamingClient[realtimev1.SubscribeResponse]
	subscribe := func() error {
		var err error
		stream, err = s.client.Subscribe(sctx, &realtimev1.SubscribeRequest{
			Channels: []string{b.cfg.channel}, AfterId: lastID, IncludeEphemeral: b.cfg.ephemeral,
			MaxBatch: uint32(b.cfg.maxBatch),
		}, grpc.ForceCodecV2(newRawCodec()))
		return err
	}
	err := subscribe()
	var frame rawFrame
	var evs []wireEvent
	for err == nil {
		err = stream.RecvMsg(&frame)
		recvNs := time.Now().UnixNano()
		if err != nil {
			if c := status.Code(err); sctx.Err() == nil && s.resumes < rtMaxResumes &&
				(c == codes.ResourceExhausted || c == codes.Unavailable) {
				s.resumes++
				s.resumeErr = err
				if !lifecycle.Sleep(sctx, rtResumePause) {
					return
				}
				err = subscribe()
			}
			continue
		}
		var perr error
		if evs, perr = parseWireEvents(frame.b, evs[:0]); perr != nil {
			s.malformed++
			continue
		}
		if len(evs) > 0 {
			s.messages++
			s.events += int64(len(evs))
		}
		for _, ev := range evs {
			b.take(s, ev, recvNs, &lastID, probed, &left)
		}
	}
	b.broke(sctx, s, err)
}

// take tallies one received event: durable order, probes, data.
func (b *rtBench) take(s *rtSub, ev wireEvent, recvNs int64, lastID *int64, probed []bool, left *int) {
	if ev.durable {
		if ev.id <= *lastID {
			s.outOfOrder++
		}
		*lastID = ev.id
	}
	if ev.run != b.run {
		s.others++ // another run, presence events, other publishers
		return
	}
	pub := ev.pub
	switch ev.kind {
	case rtKindProb:
		if p := int(pub); *left > 0 && p >= 0 && p < len(probed) && !probed[p] {
			probed[p] = true
			if *left--; *left == 0 {
				close(s.ready)
			}
		}
		return
	case rtKindData:
	default:
		return
	}
	sent, perr := strconv.ParseInt(ev.sent, 10, 64)
	seq := ev.seq
	if perr != nil || pub != float64(int(pub)) || seq != float64(int(seq)) ||
		!s.tally.record(int(pub), int(seq), sent, recvNs, b.measureFromNs.Load()) {
		s.malformed++
		return
	}
	s.distinct.Store(s.tally.distinct)
}

// broke records why a subscription ended, unless the run ended it.
func (b *rtBench) broke(sctx context.Context, s *rtSub, err error) {
	if sctx.Err() != nil {
		return
	}
	s.fail(fmt.Errorf("Subscribe on %s: %w", s.addr, err))
	b.ended <- s
}

// awaitReady publishes probes, one from each of the first len(addrs)
// publishers every rtProbeEvery, until every subscription has seen one from
// each: then every path from a publishing node to a subscribing node
// carries events (with the mesh transport, every link is up).
func (b *rtBench) awaitReady(ctx context.Context) error {
	allDone, gaveUp := make(chan struct{}), make(chan struct{})
	defer close(gaveUp)
	go func() {
		for _, s := range b.subs {
			select {
			case <-s.ready:
			case <-gaveUp:
				return
			}
		}
		close(allDone)
	}()
	deadline := time.NewTimer(rtReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(rtProbeEvery)
	defer tick.Stop()
	started := time.Now()
	probers := b.pubs[:min(len(b.pubs), len(b.cfg.addrs))]
	for {
		for _, p := range probers {
			req := &realtimev1.PublishRequest{Channel: b.cfg.channel, Kind: rtKindProb, Durable: !b.cfg.ephemeral,
				Payload: &structpb.Struct{Fields: map[string]*structpb.Value{
					rtKeyRun: structpb.NewStringValue(b.run), rtKeyPub: structpb.NewNumberValue(float64(p.idx)),
				}}}
			pctx, cancel := context.WithTimeout(ctx, rtCallTimeout)
			_, err := p.client.Publish(pctx, req)
			cancel()
			if err != nil {
				return fmt.Errorf("bench realtime: Publish (probe) on %s: %w", p.addr, err)
			}
		}
		select {
		case <-allDone:
			fmt.Fprintf(b.stderr, "bench: all %d subscriptions live after %s\n", len(b.subs), time.Since(started).Round(time.Millisecond))
			return nil
		case <-tick.C:
		case <-b.ended:
			return b.notReady("a subscription ended")
		case <-deadline.C:
			return b.notReady(fmt.Sprintf("not every subscription saw the probes within %s", rtReadyTimeout))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *rtBench) notReady(why string) error {
	ready := 0
	var first error
	for _, s := range b.subs {
		select {
		case <-s.ready:
			ready++
		default:
		}
		if err := s.failed(); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("bench realtime: %s (%d/%d live); first stream error: %w", why, ready, len(b.subs), first)
	}
	return fmt.Errorf("bench realtime: %s (%d/%d live)", why, ready, len(b.subs))
}
