package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// token runs `token create --admin` (mint the first administrator credential
// against the database) or `token generate` (print a fresh token without
// storing it, for SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN).
func token(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	if len(args) == 0 {
		return usageErr("token needs one of: create, generate")
	}
	switch args[0] {
	case "generate":
		if len(args) != 1 {
			return usageErr("token generate takes no arguments")
		}
		tok, _, err := auth.NewToken()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, tok)
		return err
	case "create":
		return tokenCreate(ctx, args[1:], stdout, lookup)
	default:
		return usageErr("unknown token command %q", args[0])
	}
}

func tokenCreate(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	admin := fs.Bool("admin", false, "mint an admin credential for the administrator human")
	email := fs.String("email", "", "administrator's email (default SWITCHBOARD_BOOTSTRAP_ADMIN_EMAIL)")
	name := fs.String("name", "created by switchboard token create", "label for the credential")
	promote := fs.Bool("promote", false, "make the human with --email an administrator even if it is not one (emails are not verified: be sure whose it is)")
	if err := fs.Parse(args); err != nil {
		return usageErr("token create: %v", err)
	}
	if !*admin || fs.NArg() != 0 {
		return usageErr("token create needs --admin (other credentials are minted with AdminService.MintCredential)")
	}
	cfg, err := config.Load(lookup)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if *email == "" {
		*email = cfg.Auth.BootstrapEmail
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Postgres.StartupTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, cfg.Postgres.URL)
	if err != nil {
		return fmt.Errorf("%s: cannot be parsed as a connection string", config.EnvDatabaseURL)
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m, err := auth.NewStore(pool, auth.NewHasher(cfg.Auth.SecretKey)).MintAdmin(ctx, *email, *name, *promote)
	if errors.Is(err, auth.ErrNotAdministrator) {
		return fmt.Errorf("mint admin credential: %w (pass --promote to make it one knowingly)", err)
	}
	if err != nil {
		return fmt.Errorf("mint admin credential: %w", err)
	}
	if m.Promoted {
		fmt.Fprintf(os.Stderr, "PROMOTED existing human %s to deployment administrator (--promote)\n", *email)
	}
	// Only the token goes to stdout, so `TOKEN=$(switchboard token create
	// --admin)` works; the credential id is for the operator's records.
	_, err = fmt.Fprintln(stdout, m.Token)
	fmt.Fprintf(os.Stderr, "minted admin credential %s for %s; the token is shown only now\n", m.CredentialID, *email)
	return err
}
