package sources

import (
	"fmt"
	"sync"

	"github.com/switchboard/switchboard/pkg/pgnotify"
)

// changesChannel carries "this endpoint changed" between nodes; the payload
// is the endpoint's slug, which is what the webhook edge caches by.
const changesChannel = "switchboard_endpoints"

// changesQueue bounds the announcements waiting for the node's sender; one
// dropped when it is full leaves that change to the caches' TTL.
const changesQueue = 1024

// changes tells the webhook edges of every node that an endpoint changed
// (disabled, updated, its secrets rotated, deleted), so none keeps serving
// it from its cache: at once on this node, through the node's notifier for
// the others. A cache must still expire its entries on its own: a
// notification can be lost (the sender's queue full, the listen connection
// down), and NOTIFY only shortens the wait (DESIGN.md).
type changes struct {
	mu        sync.Mutex
	out       *pgnotify.Queue // nil: no notifier, this process only
	notifier  *pgnotify.Notifier
	listening bool
	listeners []func(slug string)
}

// UseNotifier makes the store announce its committed endpoint changes
// through n (the node's notifier), and hear other nodes' through it for the
// listeners OnEndpointChange registers. Call it before n starts.
func (s *Store) UseNotifier(n *pgnotify.Notifier) {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	s.changes.notifier = n
	s.changes.out = n.Queue(changesChannel, changesQueue)
}

// OnEndpointChange registers fn to be told the slug of every endpoint that
// changed: committed by this store (at once, after the commit), or by any
// node's (through the notifier given to UseNotifier, which must not have
// started yet). slug "" means "anything may have changed": the listen
// connection was (re)established, and what was sent while it was down is
// lost. fn runs on the caller's or the listen goroutine and must not block.
func (s *Store) OnEndpointChange(fn func(slug string)) error {
	c := &s.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, fn)
	if c.notifier == nil || c.listening {
		return nil
	}
	err := c.notifier.Subscribe(changesChannel, pgnotify.Subscriber{
		OnNotify:  c.tell,
		OnConnect: func() { c.tell("") },
	})
	if err != nil {
		return fmt.Errorf("sources: hear endpoint changes: %w", err)
	}
	c.listening = true
	return nil
}

// changed announces a committed change of the endpoint with slug.
func (c *changes) changed(slug string) {
	c.tell(slug)
	c.mu.Lock()
	out := c.out
	c.mu.Unlock()
	if out != nil {
		out.Send(slug) // never blocks; a full queue drops it (the TTL covers)
	}
}

func (c *changes) tell(slug string) {
	c.mu.Lock()
	ls := c.listeners
	c.mu.Unlock()
	for _, fn := range ls {
		fn(slug)
	}
}
