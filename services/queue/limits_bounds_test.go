//go:build integration

package queue_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// TestSetQueueLimitsRefusesRatesOutOfBounds: every rate (the queue's, the
// keys' default, a key pattern's) is 0 or from one claim a day to
// 1,000,000 a second: 1e-300, the smallest double, just under a day,
// negative, NaN, the infinities (protojson takes "NaN" and "Infinity" from
// REST) and a huge value are INVALID_ARGUMENT naming the field, and nothing
// is stored; the bounds themselves are accepted.
func TestSetQueueLimitsRefusesRatesOutOfBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const day = 1.0 / 86400
	fields := map[string]func(float64) *queuev1.SetQueueLimitsRequest{
		"rate_per_second": func(r float64) *queuev1.SetQueueLimitsRequest {
			return &queuev1.SetQueueLimitsRequest{Queue: "q", RatePerSecond: r}
		},
		"key_rate_per_second": func(r float64) *queuev1.SetQueueLimitsRequest {
			return &queuev1.SetQueueLimitsRequest{Queue: "q", KeyRatePerSecond: r}
		},
		"key_patterns[0].rate_per_second": func(r float64) *queuev1.SetQueueLimitsRequest {
			return &queuev1.SetQueueLimitsRequest{Queue: "q", KeyPatterns: []*queuev1.KeyPattern{{Pattern: "k*", RatePerSecond: r}}}
		},
	}
	for field, req := range fields {
		for _, bad := range []float64{1e-300, math.SmallestNonzeroFloat64, day * 0.999, -day, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1_000_001, 1e300} {
			_, err := e.srv.SetQueueLimits(e.owner(t), req(bad))
			require.Equal(t, codes.InvalidArgument, code(err), "%s = %v", field, bad)
			require.Equal(t, field, onlyViolatedField(t, err), "%s = %v", field, bad)
			require.Contains(t, err.Error(), "one claim a day")
		}
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM queue_controls`), "nothing was stored")
	for field, req := range fields {
		for _, good := range []float64{day, 0.5, 1_000_000} {
			_, err := e.srv.SetQueueLimits(e.owner(t), req(good))
			require.NoError(t, err, "%s = %v", field, good)
		}
	}
}

// TestClaimSurvivesStoredRatesOutOfBounds: rates stored before
// SetQueueLimits bounded them (written here by SQL) never fail a claim:
// 1e-300 on the queue, on a key pattern and on a key's row, with bursts,
// made every claim fail INTERNAL ("timestamp out of range"); now each is
// read as one claim a day (the burst is claimed, then nothing, and a
// long poll waits without error). A key row's NaN or infinite rate reads as
// the largest, and a queue whose tat a slow rate left far ahead, then
// raised to the largest rate, claims nothing instead of overflowing. The
// repair pass reports such a queue once per node.
func TestClaimSurvivesStoredRatesOutOfBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	setLimits := func(req *queuev1.SetQueueLimitsRequest) {
		t.Helper()
		_, err := e.srv.SetQueueLimits(e.owner(t), req)
		require.NoError(t, err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := e.pool.Exec(t.Context(), sql, args...)
		require.NoError(t, err)
	}
	claim := func(q string, wait time.Duration) []*queuev1.Todo {
		t.Helper()
		res, err := e.srv.Claim(e.worker(t), &queuev1.ClaimRequest{Queue: q, WorkerId: "w", MaxTodos: 10, Wait: durationpb.New(wait)})
		require.NoError(t, err, "queue %s", q)
		return res.GetTodos()
	}

	// The queue's own rate.
	setLimits(&queuev1.SetQueueLimitsRequest{Queue: "tiny", RatePerSecond: 1, RateBurst: 2})
	exec(`UPDATE queue_controls SET rate_per_second = 1e-300 WHERE queue = 'tiny'`)
	e.enqueue(t, "tiny", 5)
	require.Len(t, claim("tiny", 0), 2, "the burst")
	require.Empty(t, claim("tiny", 300*time.Millisecond), "then one a day")
	var ahead float64
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`SELECT extract(epoch FROM tat - now()) FROM queue_controls WHERE queue = 'tiny'`).Scan(&ahead))
	require.InDelta(t, 2*86400, ahead, 5, "two claims at one a day: tat two days ahead (with a burst of two, the next token in one)")

	// A key pattern's rate, resolved into the key's row, and the keys'
	// default.
	setLimits(&queuev1.SetQueueLimitsRequest{
		Queue: "keyed", KeyRatePerSecond: 1, KeyRateBurst: 3,
		KeyPatterns: []*queuev1.KeyPattern{{Pattern: "k*", RatePerSecond: 1, RateBurst: 3}},
	})
	enqueueKeyed(t, e, "keyed", map[string]int{"k1": 5, "other": 5, "nan": 3, "inf": 3})
	exec(`UPDATE queue_controls SET key_rate_per_second = 1e-300,
	          key_patterns = jsonb_set(key_patterns, '{0,rate_per_second}', '1e-300') WHERE queue = 'keyed'`)
	exec(`UPDATE queue_keys SET rate_per_second = 1e-300 WHERE key = 'k1'`)
	exec(`UPDATE queue_keys SET rate_per_second = 'NaN' WHERE key = 'nan'`)
	exec(`UPDATE queue_keys SET rate_per_second = 'Infinity' WHERE key = 'inf'`)
	perKey := map[string]int{}
	for range 4 {
		for _, td := range claim("keyed", 0) {
			perKey[td.GetConcurrencyKey()]++
		}
	}
	require.Equal(t, map[string]int{"k1": 3, "other": 3, "nan": 3, "inf": 3}, perKey,
		"each tiny rate gives its burst, then nothing; NaN and infinity read as the largest rate")
	require.Empty(t, claim("keyed", 300*time.Millisecond))

	// A tat far ahead (a slow rate's debt), then the largest rate.
	setLimits(&queuev1.SetQueueLimitsRequest{Queue: "ahead", RatePerSecond: 1_000_000})
	exec(`UPDATE queue_controls SET tat = now() + interval '1000 years' WHERE queue = 'ahead'`)
	e.enqueue(t, "ahead", 1)
	require.Empty(t, claim("ahead", 300*time.Millisecond))

	// Reported once per node by the repair pass, whichever pass finds it.
	logs, seen := observer.New(zap.WarnLevel)
	node := queue.New(zap.New(logs), e.pool)
	for range 2 {
		exec(`UPDATE queue_controls SET repaired_at = NULL`)
		_, err := node.RepairOnce(t.Context())
		require.NoError(t, err)
	}
	warned := map[string]int{}
	for _, entry := range seen.FilterMessageSnippet("out of bounds").All() {
		warned[entry.ContextMap()["queue"].(string)]++ //nolint:forcetypeassert // zap.String
	}
	require.Equal(t, map[string]int{"tiny": 1, "keyed": 1}, warned)
}
