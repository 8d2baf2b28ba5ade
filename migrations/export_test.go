//go:build integration

package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
)

// Count is the number of embedded migrations: what Up applies to an empty
// database. Not Latest: the numbers may have gaps (a branch that holds a
// later migration but not an earlier one of another branch).
func Count() int {
	names, _ := fs.Glob(files, "*.sql")
	return len(names)
}

// DownTo rolls the schema back to version (0 = everything) through the same
// provider Up uses. Test-only: production rolls forward with new migrations.
func DownTo(ctx context.Context, db *sql.DB, version int64) (int, error) {
	p, err := newProvider(db)
	if err != nil {
		return 0, err
	}
	results, err := p.DownTo(ctx, version)
	if err != nil {
		return len(results), fmt.Errorf("migrations: down to %d: %w", version, err)
	}
	return len(results), nil
}

// UpTo applies the migrations up to and including version. Test-only: it
// lets a test put rows into an older schema and check what a later
// migration does with them.
func UpTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrations: up to %d: %w", version, err)
	}
	return nil
}
