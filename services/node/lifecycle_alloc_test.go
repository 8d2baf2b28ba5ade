//go:build integration

package node

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestUnwatchedTodoChangesAllocateNothing: a queue moving todos with nobody
// subscribed to their lifecycle channel pays map lookups only, the channel
// and kind names included (they used to be concatenated on every change).
func TestUnwatchedTodoChangesAllocateNothing(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	pool := pgtest.NewPool(t)
	n := pgnotify.New(zap.NewNop(), pool, pgnotify.Options{})
	p, err := realtime.NewSystemPublisher(zap.NewNop(), pool, realtime.SystemPublisherOptions{NodeID: "queue-only", Notifier: n})
	require.NoError(t, err)
	publish := todoLifecycle(lifecycleEvents{publisher: p})
	e := queue.TodoEvent{HumanID: uuid.New(), Queue: "unwatched", Kind: queue.EventEnqueued, TodoID: 1}
	publish(e) // the first change of a queue remembers its names
	require.Zero(t, testing.AllocsPerRun(200, func() { publish(e) }))
}
