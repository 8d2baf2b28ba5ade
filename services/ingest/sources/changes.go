package sources

import (
	"fmt"
	"sync"

	"github.com/switchboard/switchboard/pkg/pgnotify"
)

// The channels the store announces its committed changes on. An endpoint's
// payload is its slug, which is what the webhook edge caches by; an
// adapter's is its id, though a runner re-reads them all.
const (
	changesChannel        = "switchboard_endpoints"
	adapterChangesChannel = "switchboard_adapters"
)

// changesQueue bounds the announcements waiting for the node's sender; one
// dropped when it is full leaves that change to the caches' TTL (endpoints)
// or the runners' next reconcile (adapters).
const changesQueue = 1024

// changes tells every node that something the store holds changed: the
// webhook edges that an endpoint did (disabled, updated, its secrets
// rotated, deleted), so none keeps serving it from its cache; the adapter
// runners that an adapter did, so one created, changed or deleted starts or
// stops within moments rather than at the next reconcile. At once on this
// node, through the node's notifier for the others. A listener must still
// catch up on its own (a TTL, a periodic reconcile): a notification can be
// lost (the sender's queue full, the listen connection down), and NOTIFY
// only shortens the wait (DESIGN.md).
type changes struct {
	channel   string
	mu        sync.Mutex
	out       *pgnotify.Queue // nil: no notifier, this process only
	notifier  *pgnotify.Notifier
	listening bool
	listeners []func(key string)
}

// UseNotifier makes the store announce its committed endpoint and adapter
// changes through n (the node's notifier), and hear other nodes' through it
// for the listeners OnEndpointChange and OnAdapterChange register. Call it
// before n starts.
func (s *Store) UseNotifier(n *pgnotify.Notifier) {
	for _, c := range []*changes{&s.changes, &s.adapterChanges} {
		c.mu.Lock()
		c.notifier = n
		c.out = n.Queue(c.channel, changesQueue)
		c.mu.Unlock()
	}
}

// OnEndpointChange registers fn to be told the slug of every endpoint that
// changed: committed by this store (at once, after the commit), or by any
// node's (through the notifier given to UseNotifier, which must not have
// started yet). slug "" means "anything may have changed": the listen
// connection was (re)established, and what was sent while it was down is
// lost. fn runs on the caller's or the listen goroutine and must not block.
func (s *Store) OnEndpointChange(fn func(slug string)) error {
	return s.changes.listen(fn)
}

// OnAdapterChange registers fn to be told that an adapter was created,
// changed or deleted, as OnEndpointChange is of endpoints (id "": anything
// may have changed). fn must not block.
func (s *Store) OnAdapterChange(fn func(id string)) error {
	return s.adapterChanges.listen(fn)
}

func (c *changes) listen(fn func(key string)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listeners = append(c.listeners, fn)
	if c.notifier == nil || c.listening {
		return nil
	}
	err := c.notifier.Subscribe(c.channel, pgnotify.Subscriber{
		OnNotify:  c.tell,
		OnConnect: func() { c.tell("") },
	})
	if err != nil {
		return fmt.Errorf("sources: hear %s: %w", c.channel, err)
	}
	c.listening = true
	return nil
}

// changed announces a committed change of the endpoint or adapter key.
func (c *changes) changed(key string) {
	c.tell(key)
	c.mu.Lock()
	out := c.out
	c.mu.Unlock()
	if out != nil {
		out.Send(key) // never blocks; a full queue drops it (the listeners catch up)
	}
}

func (c *changes) tell(key string) {
	c.mu.Lock()
	ls := c.listeners
	c.mu.Unlock()
	for _, fn := range ls {
		fn(key)
	}
}
