package auth

import (
	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// Tenant is who a statement over tenant-owned rows runs for: the caller's
// human, and whether it is an administrator (who reaches every human's
// rows). Every package that owns tenant-owned tables takes one and filters
// by it in SQL, so another tenant's row looks exactly like a missing one.
type Tenant struct {
	HumanID       uuid.UUID
	Administrator bool
}

// Tenant is the principal's reach.
func (p Principal) Tenant() Tenant { return Tenant{HumanID: p.HumanID, Administrator: p.Administrator} }

// constraints maps the identity tables' constraints (named
// <table>_<what>_check/_key by the migrations) to what a client is told.
var constraints = &apierr.Constraints{
	Checks: map[string]apierr.FieldViolation{
		"humans_email_check":           {Field: "human.email", Description: "must look like x@y, without whitespace"},
		"humans_email_length_check":    {Field: "human.email", Description: "must be at most 320 characters"},
		"agents_name_check":            {Field: "agent.name", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
		"agents_metadata_check":        {Field: "agent.metadata", Description: "must be a JSON object"},
		"credentials_expires_at_check": {Field: "expires_at", Description: "must be in the future"},
	},
	Uniques: map[string]string{
		"humans_email_lower_key":   "a human with this email already exists",
		"agents_human_id_name_key": "the human already has an agent with this name",
	},
}

// dbErr maps a statement's error for a client; what names the row.
func dbErr(err error, op, what string) error { return apierr.FromPostgres(err, op, what, constraints) }
