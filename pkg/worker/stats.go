package worker

import "sync/atomic"

// Stats are a Worker's counters since it was created.
type Stats struct {
	// Claimed todos received from Claim.
	Claimed int64
	// Completed todos (the server confirmed the Complete).
	Completed int64
	// Failed todos (the server confirmed the Fail), including dead-lettered
	// ones.
	Failed int64
	// DeadLettered todos: the subset of Failed the Fail left DEAD.
	DeadLettered int64
	// Released todos (the server confirmed the Release, at shutdown).
	Released int64
	// LeaseLost todos: the server answered FAILED_PRECONDITION or NOT_FOUND
	// to a Heartbeat, Complete, Fail or Release, so the result was dropped.
	LeaseLost int64
	// AcksRetried are acks (Complete, Fail, Release; one per todo) that met
	// a transient error and were retried at least once.
	AcksRetried int64
	// AckRetries are the attempts sent after the first, over all todos.
	AckRetries int64
	// AcksRecovered are the retried acks the server then confirmed: the
	// completions (and failures, releases) a transient error did not cost.
	AcksRecovered int64
	// AcksAlready are acks the server confirmed as already applied (a
	// retry whose earlier attempt committed but whose answer was lost).
	AcksAlready int64
	// AcksAbandoned are acks given up without a confirmation (outcome
	// Unconfirmed): transient errors until the lease would expire or
	// AckTimeout, or an error retrying cannot fix (INTERNAL…). Zero proves
	// no finished work was thrown away.
	AcksAbandoned int64
	// ClaimErrors are failed Claim calls (each followed by a backoff).
	ClaimErrors int64
	// CompleteBatches are successful CompleteBatch calls (each carries up
	// to Options.AckBatch completions).
	CompleteBatches int64
	// HeartbeatBatches are successful HeartbeatBatch calls (one per
	// HeartbeatInterval tick while todos are held, per 1000 of them).
	HeartbeatBatches int64
}

type counters struct {
	claimed, completed, failed, deadLettered, released, leaseLost      atomic.Int64
	acksRetried, ackRetries, acksRecovered, acksAlready, acksAbandoned atomic.Int64
	claimErrors, ackBatches, heartbeatBatches                          atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Claimed:          c.claimed.Load(),
		Completed:        c.completed.Load(),
		Failed:           c.failed.Load(),
		DeadLettered:     c.deadLettered.Load(),
		Released:         c.released.Load(),
		LeaseLost:        c.leaseLost.Load(),
		AcksRetried:      c.acksRetried.Load(),
		AckRetries:       c.ackRetries.Load(),
		AcksRecovered:    c.acksRecovered.Load(),
		AcksAlready:      c.acksAlready.Load(),
		AcksAbandoned:    c.acksAbandoned.Load(),
		ClaimErrors:      c.claimErrors.Load(),
		CompleteBatches:  c.ackBatches.Load(),
		HeartbeatBatches: c.heartbeatBatches.Load(),
	}
}
