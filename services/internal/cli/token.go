package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// mintingAbout is the help text of `token` and `token create`.
const mintingAbout = `create --admin mints an admin credential for the deployment's administrator human
(created if missing) directly in the database, and prints its token once; generate prints a fresh
token without storing it, for SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN. Other credentials are minted with
AdminService.MintCredential.`

// token runs `token create --admin` (mint the first administrator credential
// against the database) or `token generate` (print a fresh token without
// storing it, for SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN).
func token(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	if len(args) > 0 && args[0] == "create" {
		return tokenCreate(ctx, args[1:], stdout, lookup)
	}
	c := newCommand("token", "switchboard token create --admin [--email E] [--name N] [--promote] | generate", mintingAbout)
	c.flagsOf = "create's (--admin, --email, --name, --promote): switchboard token create --help"
	if len(args) > 0 && args[0] == "generate" {
		c = newCommand("token generate", "switchboard token generate", "Prints a fresh token, stored nowhere, for SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN.")
		args = args[1:]
	}
	pos, help, err := c.parse(args, stdout)
	switch {
	case help || err != nil:
		return err
	case c.fs.Name() == "token":
		if len(pos) == 0 {
			return usageErr("token needs one of: create, generate")
		}
		return usageErr("unknown token command %q", pos[0])
	case len(pos) != 0:
		return usageErr("token generate takes no arguments")
	}
	tok, _, err := auth.NewToken()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

func tokenCreate(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	c := newCommand("token create", "switchboard token create --admin [--email E] [--name N] [--promote]", mintingAbout+`
Reads DATABASE_URL, SWITCHBOARD_SECRET_KEY and SWITCHBOARD_BOOTSTRAP_ADMIN_EMAIL.`)
	fs := c.fs
	admin := fs.Bool("admin", false, "mint an admin credential for the administrator human (required)")
	email := fs.String("email", "", "administrator's email (default SWITCHBOARD_BOOTSTRAP_ADMIN_EMAIL)")
	name := fs.String("name", "created by switchboard token create", "label for the credential")
	promote := fs.Bool("promote", false, "make the human with --email an administrator even if it is not one (emails are not verified: be sure whose it is)")
	pos, help, err := c.parse(args, stdout)
	if help || err != nil {
		return err
	}
	if !*admin || len(pos) != 0 {
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
