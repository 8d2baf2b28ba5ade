//go:build e2e

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
	c.t.Cleanup(cancel)
	q := url.Values{"channels": {queueChannel, probeChannel, ingestChannel}, "include_ephemeral": {"true"}}
	var resp *http.Response
	// 503 until the gateway's view of the registry has the realtime node.
	require.Eventually(c.t, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/realtime/subscribe?"+q.Encode(), nil)
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+token)
		r, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed below, or by the reader
		if err != nil {
			return false
		}
		if r.StatusCode != http.StatusOK {
			_ = r.Body.Close()
			return false
		}
		resp = r
		return true
	}, 10*time.Second, 50*time.Millisecond, "subscribe to the lifecycle channels")
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
			w.probe(token, "/api/queues/"+probeQueue+"/todos", `{"kind":"probe"}`)
		}
		if !ingestHeard {
			w.probe(token, "/api/events", `{"topic":"probe"}`)
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

// probe posts body to path; 503 (the gateway's view of the registry trails
// it by up to a watch interval) is retried by the next probe.
func (w *lifecycleWatch) probe(token, path, body string) {
	w.c.t.Helper()
	code, b, err := w.c.try(w.c.t.Context(), token, http.MethodPost, path, []byte(body), nil)
	require.NoError(w.c.t, err)
	if code != http.StatusServiceUnavailable {
		require.Equal(w.c.t, http.StatusOK, code, "POST %s: %s", path, b)
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
