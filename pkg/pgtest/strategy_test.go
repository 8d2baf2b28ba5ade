//go:build integration

package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestCloneStrategyCopiesFilesOnlyWhereFsyncIsOff(t *testing.T) {
	t.Parallel()
	for fsync, want := range map[string]string{"off": "FILE_COPY", "on": "WAL_LOG", "": "WAL_LOG"} {
		if got := cloneStrategy(fsync); got != want {
			t.Errorf("cloneStrategy(%q) = %s, want %s", fsync, got, want)
		}
	}
}

// The strategy NewDatabase uses is the one for the server's own fsync, and a
// clone made with it holds the template's schema.
func TestTemplateStrategyFollowsTheServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, strategy, err := template()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if want := cloneStrategy(fsync); strategy != want {
		t.Fatalf("server has fsync=%s: clones use %s, want %s", fsync, strategy, want)
	}
	var migrated bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&migrated); err != nil {
		t.Fatal(err)
	}
	if !migrated {
		t.Fatal("a clone of the template has no goose_db_version table")
	}
}
