package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

// Which adapter may read a stream on the server a node's adapter connected
// to. Comparing addresses (adapter_source_addrs) cannot tell that two
// addresses reach one server (a host's LAN address and its loopback, a
// proxy), so each new connection asks the server who it is (INFO run_id)
// and claims (run_id, db, stream) before it reads: the claim is refused
// when another owner's adapter reads it already, or reaches the address
// dialed. run_id changes when the server restarts, so the claim also
// carries the adapter's standing across that: an adapter that recorded the
// address it dials now keeps the time it began reading, and the older
// adapter keeps the stream whichever node reconnects first. An adapter
// that never read ranks by when its config named the stream, after every
// adapter that did.

// maxRivals bounds the adapters one claim has probed: rivals are other
// owners' adapters of one db and stream (each owner holds at most
// tenant.limits' max_adapters), ranked so the strongest come first.
const maxRivals = 64

// ErrAdapterGone is a claim of an adapter deleted (or no longer a pull
// adapter) since its node started it.
var ErrAdapterGone = errors.New("sources: the adapter no longer exists")

// Rival is another owner's adapter of the same db and stream that might
// read it on the server a claim is about: the node probes its addr
// (redisstream.Probe) before claiming.
type Rival struct {
	ID       uuid.UUID
	Addr     string
	Username string
}

// ServerRivals returns the adapters a claim of adapterID on serverKey
// should probe first: none when the adapter already recorded this server,
// by its run_id (serverKey) or, after the server restarted, by the address
// it dialed (addrKey).
func (s *Store) ServerRivals(ctx context.Context, adapterID uuid.UUID, serverKey, addrKey string) ([]Rival, error) {
	rows, err := s.q.AdapterServerRivals(ctx, s.pool, dbsqlc.AdapterServerRivalsParams{
		ID: adapterID, ServerKey: serverKey, AddrKey: addrKey, MaxRows: maxRivals,
	})
	if err != nil {
		return nil, fmt.Errorf("sources: adapter server rivals: %w", err)
	}
	return postgres.Convert(rows, func(r dbsqlc.AdapterServerRivalsRow) Rival { return Rival(r) }), nil
}

// ServerClaim is what a node's adapter learned on a new connection.
type ServerClaim struct {
	AdapterID uuid.UUID
	// ServerKey and AddrKey are redisstream.StoredConfig's ServerKey of the
	// server's run_id and AddrKey of the address dialed.
	ServerKey string
	AddrKey   string
	// Probed are the rivals (ServerRivals) whose addr reached the same
	// server, each with the AddrKey its probe dialed.
	Probed map[uuid.UUID]string
}

// ClaimServer decides whether a node's adapter may read its stream on the
// server it connected to: nil, or adapter.ErrSourceTaken when the address
// dialed is another owner's, or when another owner's adapter on the same
// server outranks it. A refused adapter loses its record; one that wins
// takes the record from the adapters it outranks (their nodes stop them)
// and records the server and the address dialed. ErrAdapterGone when the
// adapter was deleted meanwhile.
func (s *Store) ClaimServer(ctx context.Context, c ServerClaim) error {
	if c.ServerKey == "" || c.AddrKey == "" {
		return errors.New("sources: a claim needs the server's key and the address dialed")
	}
	var taken bool
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			taken, err = s.claimServer(ctx, tx, c)
			return err
		})
	})
	if err == nil && taken {
		return adapter.ErrSourceTaken
	}
	return err
}

// claimServer runs a claim in tx; taken is a refusal, committed with the
// loss of the adapter's record.
func (s *Store) claimServer(ctx context.Context, tx pgx.Tx, c ServerClaim) (taken bool, err error) {
	if err := s.q.AdapterClaimLock(ctx, tx, c.AdapterID); err != nil {
		return false, fmt.Errorf("sources: lock adapter stream: %w", err)
	}
	me, err := s.q.AdapterClaimSelf(ctx, tx, dbsqlc.AdapterClaimSelfParams{ID: c.AdapterID, AddrKey: c.AddrKey})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, ErrAdapterGone
	}
	if err != nil {
		return false, fmt.Errorf("sources: read adapter claim: %w", err)
	}
	carried := eq(me.ServerKey, c.ServerKey) || eq(me.ServerAddrKey, c.AddrKey)
	mine := standing{id: c.AdapterID, read: carried, since: me.SourceSince}
	if carried {
		mine.since = *me.ServerSince
	}
	rivals, err := s.q.AdapterClaimRivals(ctx, tx, dbsqlc.AdapterClaimRivalsParams{
		HumanID: me.HumanID, ServerKey: c.ServerKey, Probed: keys(c.Probed),
	})
	if err != nil {
		return false, fmt.Errorf("sources: read adapter rivals: %w", err)
	}
	owners, err := s.q.AdapterSourceAddrOwners(ctx, tx, values(c.Probed))
	if err != nil {
		return false, fmt.Errorf("sources: read rivals' addresses: %w", err)
	}
	outranks, outranked := rank(mine, rivals, c, func(r dbsqlc.AdapterClaimRivalsRow) bool {
		// A rival dialing an address another human's adapter reaches is
		// refused there itself (as this adapter would be): it reads nothing
		// and outranks no one, else two adapters could refuse each other.
		for _, o := range owners {
			if o.AddrKey == c.Probed[r.ID] && o.HumanID != r.HumanID {
				return true
			}
		}
		return false
	})
	if taken = me.AddrTaken || outranks; taken {
		if me.ServerKey != nil {
			if err := s.q.AdapterServerRevoke(ctx, tx, []uuid.UUID{c.AdapterID}); err != nil {
				return false, fmt.Errorf("sources: drop adapter claim: %w", err)
			}
		}
		return true, nil
	}
	if len(outranked) > 0 {
		if err := s.q.AdapterServerRevoke(ctx, tx, outranked); err != nil {
			return false, fmt.Errorf("sources: revoke adapter claims: %w", err)
		}
	}
	err = s.q.AdapterServerSet(ctx, tx, dbsqlc.AdapterServerSetParams{
		ID: c.AdapterID, ServerKey: c.ServerKey, AddrKey: c.AddrKey, Carried: carried,
	})
	if err != nil {
		return false, fmt.Errorf("sources: record adapter claim: %w", err)
	}
	// The address dialed is this owner's from now on, as if the config
	// had named it (DNS may say something else than when it was set).
	if err := s.q.AdapterSourceAddrAdd(ctx, tx, dbsqlc.AdapterSourceAddrAddParams{ID: c.AdapterID, AddrKey: c.AddrKey}); err != nil {
		return false, fmt.Errorf("sources: record adapter address: %w", err)
	}
	return false, nil
}

// rank compares the claiming adapter with its rivals on the server:
// whether one of them outranks it, and which of them it outranks that hold
// a record (they lose it if the claim succeeds).
func rank(mine standing, rivals []dbsqlc.AdapterClaimRivalsRow, c ServerClaim, blocked func(dbsqlc.AdapterClaimRivalsRow) bool) (outranks bool, outranked []uuid.UUID) {
	for _, r := range rivals {
		if !eq(r.ServerKey, c.ServerKey) && blocked(r) {
			continue
		}
		theirs := standing{id: r.ID, since: r.SourceSince}
		// A rival reads this server if it recorded it, or if its probe
		// found this server at the address it recorded (a restart since).
		if eq(r.ServerKey, c.ServerKey) || (c.Probed[r.ID] != "" && eq(r.ServerAddrKey, c.Probed[r.ID])) {
			theirs.read, theirs.since = true, *r.ServerSince
		}
		switch {
		case theirs.before(mine):
			outranks = true
		case r.ServerKey != nil:
			outranked = append(outranked, r.ID)
		}
	}
	return outranks, outranked
}

// standing is an adapter's rank in a claim: adapters that read the stream
// on this server come first, the one that began earliest first; then those
// that never read it, the one whose config named it earliest first.
type standing struct {
	id    uuid.UUID
	read  bool
	since time.Time
}

func (a standing) before(b standing) bool {
	switch {
	case a.read != b.read:
		return a.read
	case !a.since.Equal(b.since):
		return a.since.Before(b.since)
	}
	return bytes.Compare(a.id[:], b.id[:]) < 0
}

// eq reports whether a nullable column holds v.
func eq(col *string, v string) bool { return col != nil && *col == v }

func keys(m map[uuid.UUID]string) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values(m map[uuid.UUID]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
