-- Lease tokens that only the claimer knows, and acks that can be retried.
--
-- lease_token was the attempt number, which any caller of the tenant could
-- guess (1, 2, …) and so complete a todo it never claimed. Every claim now
-- draws a random 63-bit token (from gen_random_uuid, the server's strong
-- random source) into lease_token, and every worker write is fenced on it.
-- Like the other lease columns it is in no index, so heartbeats stay HOT.
--
-- lease_outcome records how the lease named by lease_token ended (NULL while
-- it is held). Both survive the end of the lease, so a retried Complete (or
-- Fail, or Release) whose first answer was lost finds that its lease already
-- reached that outcome and answers success instead of "stale".

-- +goose Up

ALTER TABLE todos
    ADD COLUMN lease_token   bigint,
    ADD COLUMN lease_outcome text,
    ADD CONSTRAINT todos_lease_outcome_check CHECK (
        lease_outcome IN ('completed', 'failed', 'released', 'expired', 'cancelled')
    );

-- +goose Down

ALTER TABLE todos
    DROP CONSTRAINT todos_lease_outcome_check,
    DROP COLUMN lease_outcome,
    DROP COLUMN lease_token;
