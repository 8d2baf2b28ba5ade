package worker

import "sync/atomic"

// Stats are a Worker's counters since it was created.
type Stats struct {
	// Claimed todos received from Claim.
	Claimed int64
	// Completed todos (Complete succeeded).
	Completed int64
	// Failed todos (Fail succeeded), including dead-lettered ones.
	Failed int64
	// DeadLettered todos: the subset of Failed sent with dead_letter.
	DeadLettered int64
	// Released todos (Release succeeded at shutdown).
	Released int64
	// LeaseLost todos: the server answered FAILED_PRECONDITION or NOT_FOUND
	// to a Heartbeat, Complete, Fail or Release, so the result was dropped.
	LeaseLost int64
	// AckErrors are Complete, Fail or Release calls that failed for another
	// reason (the lease then expires on the server and the todo is retried).
	AckErrors int64
	// ClaimErrors are failed Claim calls (each followed by a backoff).
	ClaimErrors int64
	// CompleteBatches are successful CompleteBatch calls (each carries up
	// to Options.AckBatch completions).
	CompleteBatches int64
	// HeartbeatBatches are successful HeartbeatBatch calls (one per
	// HeartbeatInterval tick while todos run, per 1000 of them).
	HeartbeatBatches int64
}

type counters struct {
	claimed, completed, failed, deadLettered, released, leaseLost, ackErrors, claimErrors, ackBatches, heartbeatBatches atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Claimed:          c.claimed.Load(),
		Completed:        c.completed.Load(),
		Failed:           c.failed.Load(),
		DeadLettered:     c.deadLettered.Load(),
		Released:         c.released.Load(),
		LeaseLost:        c.leaseLost.Load(),
		AckErrors:        c.ackErrors.Load(),
		ClaimErrors:      c.claimErrors.Load(),
		CompleteBatches:  c.ackBatches.Load(),
		HeartbeatBatches: c.heartbeatBatches.Load(),
	}
}
