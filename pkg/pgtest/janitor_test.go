//go:build integration

package pgtest_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// A test's cleanup hands its database to the janitor this package's TestMain
// runs (pgtest.Tests), which drops it in the background; with PGTEST_RUN the
// name carries the run's tag, which the runner's sweep looks for.
func TestJanitorDropsTheDatabaseAfterItsTest(t *testing.T) {
	t.Setenv(pgtest.RunEnv, "janitortest")
	var name string
	t.Run("uses a database", func(t *testing.T) {
		u, err := url.Parse(pgtest.NewDatabase(t))
		require.NoError(t, err)
		name = strings.TrimPrefix(u.Path, "/")
	})
	require.True(t, strings.HasPrefix(name, "sbtest_janitortest_"), name)

	conn, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	defer conn.Close(t.Context())
	require.Eventually(t, func() bool {
		var exists bool
		err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists)
		return err == nil && !exists
	}, time.Minute, 20*time.Millisecond, "the janitor dropped %s", name)
}
