package metrics

import (
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// Queue is the queue's series: counters of todo transitions and latency
// histograms per queue, and the depth gauges a periodic query sets.
type Queue struct {
	tenant bool
	max    int
	series *capped[queueKey, *QueueSeries]

	enqueued, claimed, completed, failed, dead, expired *prometheus.CounterVec
	wait, run                                           *prometheus.HistogramVec
	depth, oldest                                       *prometheus.GaugeVec
}

type queueKey struct {
	tenant uuid.UUID // uuid.Nil unless tenants are a label
	queue  string
}

// QueueSeries is one queue's pre-resolved counters and histograms: resolve
// it once per batch (Queue.For) and record into it without further lookups.
type QueueSeries struct {
	Enqueued, Claimed, Completed, Failed, Dead, LeaseExpired prometheus.Counter
	// Wait is enqueue (or due time) to claim; Run is claim to completion.
	Wait, Run prometheus.Observer
}

// Latency buckets from 5 ms to about 20 min.
var latencyBuckets = prometheus.ExponentialBuckets(0.005, 3, 12)

func newQueue(reg prometheus.Registerer, o Options) *Queue {
	labels := []string{"queue"}
	if o.TenantLabel {
		labels = []string{"tenant", "queue"}
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return counterVec(reg, "queue", name, help, labels...)
	}
	q := &Queue{
		tenant:    o.TenantLabel,
		max:       o.MaxQueues,
		enqueued:  counter("todos_enqueued_total", "Todos created (Enqueue, EnqueueBatch, webhooks and adapters), duplicates excluded."),
		claimed:   counter("todos_claimed_total", "Todos leased to a worker by Claim (each todo of a batch once)."),
		completed: counter("todos_completed_total", "Todos completed (a retried ack of an already completed todo is not counted again)."),
		failed:    counter("todos_failed_total", "Failed attempts that will be retried (Fail below the attempt cap)."),
		dead:      counter("todos_dead_total", "Todos that became dead: Fail at the attempt cap or with dead_letter, undeliverable payloads, or lease expiries at a cap."),
		expired:   counter("todos_lease_expired_total", "Leases the reaper ended because their holder stopped heartbeating (the todo went back to pending or, at a cap, to dead)."),
		wait:      histogramVec(reg, "queue", "todo_wait_seconds", "Time from when a todo became due (its run_at, or its creation) to its claim.", latencyBuckets, labels...),
		run:       histogramVec(reg, "queue", "todo_run_seconds", "Time from a todo's claim to its completion.", latencyBuckets, labels...),
		depth:     gaugeVec(reg, "queue", "todos", "Todos per queue and state (pending, running, dead), from a query every node runs every 15 s: aggregate with max, not sum.", append(labels, "state")...),
		oldest:    gaugeVec(reg, "queue", "oldest_pending_age_seconds", "Age of the oldest due pending todo per queue (0 when none), from the same periodic query.", labels...),
	}
	q.series = newCapped(o.MaxQueues, q.build, func() *QueueSeries { return q.build(queueKey{queue: OtherQueue}) })
	return q
}

func (q *Queue) values(k queueKey) []string {
	if q.tenant {
		return []string{k.tenant.String(), k.queue}
	}
	return []string{k.queue}
}

func (q *Queue) build(k queueKey) *QueueSeries {
	v := q.values(k)
	return &QueueSeries{
		Enqueued: q.enqueued.WithLabelValues(v...), Claimed: q.claimed.WithLabelValues(v...),
		Completed: q.completed.WithLabelValues(v...), Failed: q.failed.WithLabelValues(v...),
		Dead: q.dead.WithLabelValues(v...), LeaseExpired: q.expired.WithLabelValues(v...),
		Wait: q.wait.WithLabelValues(v...), Run: q.run.WithLabelValues(v...),
	}
}

// For returns the series of tenant's queue (the tenant is ignored unless
// tenants are a label). Nil when q is nil.
func (q *Queue) For(tenant uuid.UUID, queue string) *QueueSeries {
	if q == nil {
		return nil
	}
	if !q.tenant {
		tenant = uuid.Nil
	}
	return q.series.get(queueKey{tenant: tenant, queue: queue})
}

// ObserveSince records the time since start into o, when both are set.
func ObserveSince(o prometheus.Observer, start, end time.Time) {
	if o == nil || start.IsZero() || end.IsZero() {
		return
	}
	o.Observe(max(end.Sub(start), 0).Seconds())
}

// Depth is one row of the periodic depth query.
type Depth struct {
	Tenant       uuid.UUID
	Queue, State string
	Count        int64
	// OldestPendingSeconds is the age of the group's oldest due pending
	// todo (state pending only).
	OldestPendingSeconds float64
}

// SetDepths replaces the depth and oldest-age gauges with one pass of the
// periodic query. Queues past the cap (in the order given) are summed under
// OtherQueue; ages take the oldest.
func (q *Queue) SetDepths(rows []Depth) {
	if q == nil {
		return
	}
	keep := map[queueKey]bool{}
	key := func(tenant uuid.UUID, queue string) queueKey {
		if !q.tenant {
			tenant = uuid.Nil
		}
		k := queueKey{tenant: tenant, queue: queue}
		if !keep[k] && len(keep) >= q.max {
			return queueKey{queue: OtherQueue}
		}
		keep[k] = true
		return k
	}
	type depthKey struct {
		queueKey
		state string
	}
	counts := map[depthKey]float64{}
	ages := map[queueKey]float64{}
	for _, r := range rows {
		k := key(r.Tenant, r.Queue)
		counts[depthKey{k, r.State}] += float64(r.Count)
		ages[k] = max(ages[k], r.OldestPendingSeconds)
	}
	q.depth.Reset()
	q.oldest.Reset()
	for k, n := range counts {
		q.depth.WithLabelValues(append(q.values(k.queueKey), k.state)...).Set(n)
	}
	for k, age := range ages {
		q.oldest.WithLabelValues(q.values(k)...).Set(age)
	}
}
