//go:build integration

package pgtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPruneKeepsTemplatesOtherCheckoutsStillUse: a process that builds the
// template of its schema version must not drop the template another checkout
// on the same server is cloning right now (that failed whole test runs); only
// templates unused for templateIdle go, and an unstamped one is stamped.
func TestPruneKeepsTemplatesOtherCheckoutsStillUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	// Closed by a cleanup registered before the drops below, so it runs after
	// them (cleanups run last-in first-out): a deferred Close ran before every
	// cleanup, the drops failed on a closed connection, and each run left its
	// databases behind.
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// Hold the template lock from before the databases exist until the
	// prune ran: every other test process prunes under it too, and one that
	// saw the idle database between its CREATE and its old stamp would stamp
	// it as used now, so it would rightly stay.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		t.Fatal(err)
	}
	locked := true
	unlock := func() {
		if locked {
			_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLockKey)
			locked = false
		}
	}
	defer unlock()
	suffix := randomHex(4)
	own, recent, idle, unstamped := "sbtpl_zz_own_"+suffix, "sbtpl_zz_recent_"+suffix, "sbtpl_zz_idle_"+suffix, "sbtpl_zz_unstamped_"+suffix
	for _, name := range []string{own, recent, idle, unstamped} {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
				t.Errorf("drop %s: %v", name, err)
			}
		})
	}
	now := time.Now().UTC()
	if err := stamp(ctx, conn, recent, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := stamp(ctx, conn, idle, now.Add(-templateIdle-time.Hour)); err != nil {
		t.Fatal(err)
	}
	err = pruneAndStamp(ctx, conn, own)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	comment := func(name string) (string, bool) {
		var c *string
		err := conn.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&c)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false
		}
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return "", true
		}
		return *c, true
	}
	for _, name := range []string{own, recent, unstamped} {
		c, ok := comment(name)
		if !ok {
			t.Errorf("%s was dropped; it was in use within %s", name, templateIdle)
			continue
		}
		if name != recent {
			if used, err := time.Parse(time.RFC3339, strings.TrimPrefix(c, stampPrefix)); err != nil || now.Sub(used) > time.Minute {
				t.Errorf("%s: comment %q is not a stamp of now", name, c)
			}
		}
	}
	if _, ok := comment(idle); ok {
		t.Errorf("%s is still there; unused for longer than %s it should have been dropped", idle, templateIdle)
	}
}
