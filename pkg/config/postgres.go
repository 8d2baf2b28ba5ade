package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// connString parses DATABASE_URL as every pool will, so a bad value fails
// before any listener opens. Its TLS settings (sslmode, sslrootcert,
// sslcert, sslkey) are used as written: every pool Switchboard opens
// parses this same URL and nothing overrides them. The pool reads the
// sslrootcert, sslcert and sslkey files while parsing, so a missing or
// broken one surfaces here, with pgx's reason (which names the file and
// never the password). Any other parse failure stays generic: its text
// would quote the URL.
func connString(url string) error {
	_, err := pgconn.ParseConfig(url)
	if err == nil {
		return nil
	}
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) && strings.Contains(pe.Error(), "failed to configure TLS") && errors.Unwrap(pe) != nil {
		return fmt.Errorf("%s: its TLS settings (sslmode, sslrootcert, sslcert, sslkey) do not load: %w", EnvDatabaseURL, errors.Unwrap(pe))
	}
	return errors.New(EnvDatabaseURL + ": cannot be parsed as a connection string")
}
