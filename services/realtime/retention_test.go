//go:build integration

package realtime_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/types/known/structpb"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/realtime"
)

// publishDurable publishes n durable events as human and returns their ids,
// oldest first.
func (e *env) publishDurable(human uuid.UUID, n int) []int64 {
	e.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		p, err := structpb.NewStruct(map[string]any{"i": float64(i)})
		require.NoError(e.t, err)
		res, err := e.client.Publish(as(e.t.Context(), human), &realtimev1.PublishRequest{Channel: "history", Payload: p, Durable: true})
		require.NoError(e.t, err)
		ids[i] = res.GetId()
	}
	return ids
}

// durableLeft lists human's durable events, oldest first.
func (e *env) durableLeft(human uuid.UUID) []int64 {
	e.t.Helper()
	rows, err := e.pool.Query(e.t.Context(), `SELECT id FROM realtime_events WHERE human_id = $1 ORDER BY id`, human)
	require.NoError(e.t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(e.t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(e.t, rows.Err())
	return ids
}

func (e *env) setRealtimeRetention(value string) {
	e.t.Helper()
	_, err := e.pool.Exec(e.t.Context(), `UPDATE settings SET value = $1 WHERE key = 'retention.realtime_events'`, value)
	require.NoError(e.t, err)
}

// TestRetentionTenantCapEvictsOnlyThePublishersEvents reproduces the attack
// of issue 31: a tenant publishing durable events past the cap erased every
// other tenant's oldest (the cap was the table's). Now it evicts only its
// own: it keeps exactly its newest max_rows_per_tenant, and the other
// tenant keeps all of its events. It checks what is left, not what this
// call deleted: the service's own retention loop may prune alongside.
func TestRetentionTenantCapEvictsOnlyThePublishersEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{RetentionBatch: 3})
	e.setRealtimeRetention(`{"max_age_seconds": 3600, "max_rows": 1000, "max_rows_per_tenant": 5}`)
	victim := e.publishDurable(e.human, 4)
	attacker := e.seedHuman()
	flood := e.publishDurable(attacker, 20)

	_, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, victim, e.durableLeft(e.human), "the other tenant keeps all its events")
	require.Equal(t, flood[15:], e.durableLeft(attacker), "the publisher keeps exactly its newest 5")

	more := e.publishDurable(attacker, 2)
	_, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, append(flood[17:], more...), e.durableLeft(attacker))
	require.Equal(t, victim, e.durableLeft(e.human))
}

// TestRetentionSafetyNetCutsTheLargestTenantFirst: when the tenants
// together hold more durable events than max_rows (each within its own
// cap), the largest tenant's oldest go first, down to the level at which the
// table fits; the smallest keeps everything.
// It warns, and counts what it took, since it means the operator
// provisioned less than tenants × max_rows_per_tenant.
func TestRetentionSafetyNetCutsTheLargestTenantFirst(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	r := metrics.New(metrics.Options{})
	e := newEnvLogged(t, pgtest.NewPool(t), realtime.Options{Metrics: r}, zap.New(core))
	e.setRealtimeRetention(`{"max_age_seconds": 3600, "max_rows": 10, "max_rows_per_tenant": 50}`)
	small := e.publishDurable(e.human, 1)
	large, medium := e.seedHuman(), e.seedHuman()
	largeIDs := e.publishDurable(large, 8)
	mediumIDs := e.publishDurable(medium, 5)

	_, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	// 14 events, 10 allowed: the largest is cut to 4, the medium keeps its 5
	// (the table then holds exactly 10), the small its 1.
	require.Equal(t, largeIDs[4:], e.durableLeft(large), "the largest loses its oldest first")
	require.Equal(t, mediumIDs, e.durableLeft(medium))
	require.Equal(t, small, e.durableLeft(e.human))
	require.InDelta(t, 4.0, safetyNetRows(t, r), 0)
	warned := logs.FilterMessageSnippet("retention safety net").All()
	require.NotEmpty(t, warned)
	require.Equal(t, int64(10), warned[len(warned)-1].ContextMap()["max_rows"])
}

// safetyNetRows is what the table-wide cap deleted from realtime_events.
func safetyNetRows(t *testing.T, r *metrics.Registry) float64 {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != "switchboard_retention_rows_deleted_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["table"] == "realtime_events" && labels["rule"] == metrics.RuleTableCap {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
