package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth/internal/dbsqlc"
)

// mintExpiry bounds a new credential's expiry, on the database clock:
//
//   - by c.MaxLifetime from now, when set: a request without an expiry gets
//     that much, a later one is INVALID_ARGUMENT naming the limit;
//   - by the minting credential's own expiry, when it has one: a request
//     without an expiry gets it, a later one is INVALID_ARGUMENT. A stolen
//     short-lived token must not mint itself a longer life.
//
// It returns the expiry to store (nil: never expires). It runs in the
// mint's transaction, tx.
func (s *Store) mintExpiry(ctx context.Context, tx dbsqlc.DBTX, c NewCredential) (*time.Time, error) {
	if c.MaxLifetime <= 0 && c.Minter == nil {
		return c.ExpiresAt, nil
	}
	b, err := s.q.CredentialMintBounds(ctx, tx, c.Minter)
	if err != nil {
		return nil, dbErr(err, "read credential bounds", "credential")
	}
	expires := c.ExpiresAt
	if c.MaxLifetime > 0 {
		latest := b.Now.Add(c.MaxLifetime)
		if expires == nil {
			expires = &latest
		} else if expires.After(latest) {
			return nil, tooLate(fmt.Sprintf("must be at most %s from now, the maximum credential lifetime "+
				"(setting auth.credentials, max_ttl_seconds = %d): %s at the latest",
				c.MaxLifetime, int64(c.MaxLifetime/time.Second), latest.UTC().Format(time.RFC3339)))
		}
	}
	if m := b.MinterExpiresAt; m != nil && (expires == nil || expires.After(*m)) {
		if c.ExpiresAt != nil {
			return nil, tooLate(fmt.Sprintf("must not be later than the expiry of the credential minting it "+
				"(a credential never outlives the one that minted it): %s at the latest", m.UTC().Format(time.RFC3339)))
		}
		expires = m
	}
	return expires, nil
}

func tooLate(description string) error {
	return apierr.Invalid(apierr.FieldViolation{Field: "expires_at", Description: description})
}
