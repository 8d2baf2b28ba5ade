//go:build integration

package split

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"
)

// The lifecycle channels the journey watches: its queue's, a probe queue's
// and the ingest's.
const (
	queueChannel  = "sys:queue:" + queueName
	probeQueue    = queueName + "-probe"
	probeChannel  = "sys:queue:" + probeQueue
	ingestChannel = "sys:ingest"
)

// lifecycleEvent is one ephemeral event of a lifecycle stream.
type lifecycleEvent struct {
	Channel string         `json:"channel"`
	Kind    string         `json:"kind"`
	Payload map[string]any `json:"payload"`
}

// todoID is the event's todo_id, as the REST API spells ids (a string).
func (e lifecycleEvent) todoID() string {
	f, _ := e.Payload["todo_id"].(float64)
	return strconv.FormatInt(int64(f), 10)
}

// lifecycleWatch is a REST subscription, through the gateway to the
// realtime process, to the lifecycle events that the queue and ingest
// processes (which run no realtime) publish.
type lifecycleWatch struct {
	c      *client
	events chan lifecycleEvent
	cancel context.CancelFunc
	done   chan struct{}
}

// watchLifecycle subscribes (live, ephemeral included) as token; close ends it.
func (c *client) watchLifecycle(token string) *lifecycleWatch {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	q := url.Values{"channels": {queueChannel, probeChannel, ingestChannel}, "include_ephemeral": {"true"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/realtime/subscribe?"+q.Encode(), nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by the reader below
	if err != nil {
		cancel()
		require.NoError(c.t, err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		_ = resp.Body.Close()
		require.Equal(c.t, http.StatusOK, resp.StatusCode, "subscribe to the lifecycle channels")
	}
	w := &lifecycleWatch{c: c, events: make(chan lifecycleEvent, 64), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var line struct {
				Result struct {
					Event *lifecycleEvent `json:"event"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || line.Result.Event == nil {
				continue // keepalives
			}
			select {
			case w.events <- *line.Result.Event:
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}

func (w *lifecycleWatch) close() {
	w.cancel()
	<-w.done
}

// waitListened probes until both the queue and the ingest process publish
// to this subscription: each reads who listens from the presence table
// every few seconds, so a subscription is heard only once both have.
func (w *lifecycleWatch) waitListened(token string) {
	w.c.t.Helper()
	var queueHeard, ingestHeard bool
	deadline := time.After(30 * time.Second)
	for !queueHeard || !ingestHeard {
		if !queueHeard {
			w.c.call(token, http.MethodPost, "/api/queues/"+probeQueue+"/todos", `{"kind":"probe"}`, http.StatusOK, nil)
		}
		if !ingestHeard {
			w.c.call(token, http.MethodPost, "/api/events", `{"topic":"probe"}`, http.StatusOK, nil)
		}
		pace := time.After(100 * time.Millisecond)
		for waiting := true; waiting; {
			select {
			case e := <-w.events:
				queueHeard = queueHeard || (e.Channel == probeChannel && e.Kind == "todo.enqueued")
				ingestHeard = ingestHeard || (e.Channel == ingestChannel && e.Kind == "event.received")
			case <-pace: // paces the probes
				waiting = false
			case <-deadline:
				w.c.t.Fatalf("lifecycle events never reached the subscriber: queue %v, ingest %v", queueHeard, ingestHeard)
			}
		}
	}
}

// requireTodoLifecycle requires todo.completed on the journey's queue and
// event.received on the ingest's channel, both about todoID.
func (w *lifecycleWatch) requireTodoLifecycle(todoID string) {
	w.c.t.Helper()
	var completed, received bool
	deadline := time.After(15 * time.Second)
	for !completed || !received {
		select {
		case e := <-w.events:
			if e.todoID() != todoID {
				continue
			}
			completed = completed || (e.Channel == queueChannel && e.Kind == "todo.completed")
			received = received || (e.Channel == ingestChannel && e.Kind == "event.received")
		case <-deadline:
			w.c.t.Fatalf("todo %s: todo.completed seen %v, event.received seen %v", todoID, completed, received)
		}
	}
}
