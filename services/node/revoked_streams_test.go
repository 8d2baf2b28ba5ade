//go:build integration

package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
)

// streamTTL is the token cache's lifetime in these tests: a stream must end
// within it of its credential's revocation (plus the lookup), as a call is
// refused within it. Short, so the tests wait for a condition rather than
// for the default 10 s.
const streamTTL = 400 * time.Millisecond

// liveStream is an open server stream, gRPC or REST: it has delivered its
// first message, and ended reports how it ended.
type liveStream struct {
	name  string
	ended <-chan error // the stream's last error (a gRPC status), once
}

// asToken is a connection that calls with token.
func asToken(t *testing.T, b *testBundle, token string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// mintFor mints an admin credential (of human, or the caller's own when
// empty) over conn, and returns its id and token.
func mintFor(t *testing.T, conn *grpc.ClientConn, human string, scopes ...string) (string, string) {
	t.Helper()
	m, err := adminv1.NewAdminServiceClient(conn).MintCredential(t.Context(),
		&adminv1.MintCredentialRequest{HumanId: human, Scopes: scopes})
	require.NoError(t, err)
	return m.GetCredential().GetId(), m.GetToken()
}

// grpcSubscribe subscribes to channel over conn (in the tenant ctx names)
// and returns once the stream delivered a message: a marker it publishes
// until one comes back, so the stream is registered before the test goes on.
func grpcSubscribe(t *testing.T, ctx context.Context, conn *grpc.ClientConn, channel string) liveStream {
	t.Helper()
	rt := realtimev1.NewRealtimeServiceClient(conn)
	stream, err := rt.Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: []string{channel}, IncludeEphemeral: true})
	require.NoError(t, err)
	got, ended := drain(stream)
	awaitFirst(t, got, ended, func() {
		_, err := rt.Publish(ctx, &realtimev1.PublishRequest{Channel: channel, Kind: "marker"})
		require.NoError(t, err)
	})
	return liveStream{name: "gRPC Subscribe", ended: ended}
}

// drain receives from stream until it ends: got has a value once a message
// came, ended the error that ended it.
func drain[M any](stream interface{ Recv() (M, error) }) (got chan struct{}, ended chan error) {
	got, ended = make(chan struct{}, 1), make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				ended <- err
				return
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	return got, ended
}

// grpcWatchNodes opens WatchNodes over conn; it answers at once.
func grpcWatchNodes(t *testing.T, conn *grpc.ClientConn) liveStream {
	t.Helper()
	stream, err := registryv1.NewRegistryServiceClient(conn).WatchNodes(t.Context(), &registryv1.WatchNodesRequest{})
	require.NoError(t, err)
	got, ended := drain(stream)
	awaitFirst(t, got, ended, func() {})
	return liveStream{name: "gRPC WatchNodes", ended: ended}
}

// restStream GETs an NDJSON stream of the gateway with token (and the
// tenant header when tenant is set) and returns once a line arrived; poke,
// run until then, makes one arrive. Its end is the error of its last line
// ({"error": {...}}, after the 200 was sent), as a gRPC status.
func restStream(t *testing.T, b *testBundle, token, tenant, path string, poke func()) liveStream {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.node.HTTPAddr()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if tenant != "" {
		req.Header.Set("X-Switchboard-Tenant", tenant)
	}
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // closed by the reader below
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, ended := make(chan struct{}, 1), make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			var line struct {
				Error *struct {
					Code    codes.Code `json:"code"`
					Message string     `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
				ended <- err
				return
			}
			if line.Error != nil {
				ended <- status.Error(line.Error.Code, line.Error.Message)
				return
			}
			select {
			case got <- struct{}{}:
			default:
			}
		}
		ended <- status.Error(codes.Unknown, "the stream ended without an error line")
	}()
	awaitFirst(t, got, ended, poke)
	return liveStream{name: "REST " + path, ended: ended}
}

// awaitFirst runs poke every 20 ms until got signals a first message.
func awaitFirst(t *testing.T, got <-chan struct{}, ended <-chan error, poke func()) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		poke()
		select {
		case <-got:
			return
		case err := <-ended:
			require.FailNow(t, "the stream ended before its first message", "%v", err)
		case <-tick.C:
		case <-deadline:
			require.FailNow(t, "the stream never delivered a first message")
		}
	}
}

// requireEndsUnauthenticated waits for each stream to end with code and
// the message every refused credential gets.
func requireEnds(t *testing.T, want codes.Code, streams ...liveStream) {
	t.Helper()
	for _, s := range streams {
		select {
		case err := <-s.ended:
			require.Equal(t, want, status.Code(err), "%s: %v", s.name, err)
			if want == codes.Unauthenticated {
				require.Equal(t, "missing or invalid credentials", status.Convert(err).Message(), s.name)
			}
		case <-time.After(30 * time.Second):
			require.FailNow(t, s.name+" is still open")
		}
	}
}

// requireOpen checks that no stream has ended (after the others did, so a
// check pass has run since).
func requireOpen(t *testing.T, streams ...liveStream) {
	t.Helper()
	for _, s := range streams {
		select {
		case err := <-s.ended:
			require.FailNow(t, s.name+" ended", "%v", err)
		default:
		}
	}
}

// The attack: a client holds Subscribe and WatchNodes streams (gRPC, and
// NDJSON through the gateway) open with a credential that is then revoked,
// its human disabled, its agent deleted, or an administrator's credential
// acting in another tenant revoked. Every such stream ends with
// UNAUTHENTICATED within the token cache's TTL; the others go on.
func TestRevokedCredentialsEndTheirStreams(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.CacheTTL = streamTTL })
	admin := adminv1.NewAdminServiceClient(b.conn)
	newTenant := func(t *testing.T, email string) string {
		t.Helper()
		h, err := admin.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: email}})
		require.NoError(t, err)
		return h.GetHuman().GetId()
	}

	t.Run("revoked, with what it minted", func(t *testing.T) {
		t.Parallel()
		ada := newTenant(t, "ada@example.com")
		victimID, victim := mintFor(t, b.conn, ada, "admin")
		_, child := mintFor(t, asToken(t, b, victim), "", "admin") // the thief's successor
		_, bystander := mintFor(t, b.conn, ada, "admin")
		victimConn := asToken(t, b, victim)
		streams := []liveStream{
			grpcSubscribe(t, t.Context(), victimConn, "room"),
			restStream(t, b, victim, "", "/api/realtime/subscribe?channels=room&include_ephemeral=true", func() {
				_, err := realtimev1.NewRealtimeServiceClient(victimConn).Publish(t.Context(),
					&realtimev1.PublishRequest{Channel: "room", Kind: "marker"})
				require.NoError(t, err)
			}),
			grpcSubscribe(t, t.Context(), asToken(t, b, child), "room"),
		}
		other := grpcSubscribe(t, t.Context(), asToken(t, b, bystander), "room")

		_, err := admin.RevokeCredential(t.Context(), &adminv1.RevokeCredentialRequest{Id: victimID})
		require.NoError(t, err)
		requireEnds(t, codes.Unauthenticated, streams...)
		requireOpen(t, other)
	})

	t.Run("an administrator acting in a tenant, revoked", func(t *testing.T) {
		t.Parallel()
		bob := newTenant(t, "bob@example.com")
		rootID, root := mintFor(t, b.conn, "", "admin") // the bootstrap human's: an administrator
		rootConn := asToken(t, b, root)
		inBob := metadata.AppendToOutgoingContext(t.Context(), auth.TenantHeader, bob)
		streams := []liveStream{
			grpcSubscribe(t, inBob, rootConn, "room"),
			grpcWatchNodes(t, rootConn),
			restStream(t, b, root, bob, "/api/realtime/subscribe?channels=room&include_ephemeral=true", func() {
				_, err := realtimev1.NewRealtimeServiceClient(rootConn).Publish(inBob,
					&realtimev1.PublishRequest{Channel: "room", Kind: "marker"})
				require.NoError(t, err)
			}),
			restStream(t, b, root, "", "/api/admin/cluster/watch", func() {}),
		}
		_, err := admin.RevokeCredential(t.Context(), &adminv1.RevokeCredentialRequest{Id: rootID})
		require.NoError(t, err)
		requireEnds(t, codes.Unauthenticated, streams...)
	})

	t.Run("a human disabled by an administrator", func(t *testing.T) {
		t.Parallel()
		carol := newTenant(t, "carol@example.com")
		_, tok := mintFor(t, b.conn, carol, "admin")
		s := grpcSubscribe(t, t.Context(), asToken(t, b, tok), "room")
		_, err := admin.UpdateHuman(t.Context(), &adminv1.UpdateHumanRequest{
			Human:      &adminv1.Human{Id: carol, DisabledAt: timestamppb.Now()},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"disabled_at"}},
		})
		require.NoError(t, err)
		requireEnds(t, codes.Unauthenticated, s)
	})

	t.Run("an agent deleted", func(t *testing.T) {
		t.Parallel()
		dave := newTenant(t, "dave@example.com")
		a, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: dave, Name: "worker"}})
		require.NoError(t, err)
		m, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
			HumanId: dave, AgentId: a.GetAgent().GetId(), Scopes: []string{"agent", "publisher"},
		})
		require.NoError(t, err)
		worker := asToken(t, b, m.GetToken())
		s := grpcSubscribe(t, t.Context(), worker, "room")
		_, err = admin.DeleteAgent(t.Context(), &adminv1.DeleteAgentRequest{Id: a.GetAgent().GetId()})
		require.NoError(t, err)
		requireEnds(t, codes.Unauthenticated, s)
	})
}

// The console's REST stream through the gateway: once its credential is
// revoked the NDJSON stream's last line is the 401 of a call,
// UNAUTHENTICATED, and a new request is answered 401 outright. The listing
// shows who minted it.
func TestRevokedCredentialsRESTStreamEndsUnauthenticated(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.CacheTTL = streamTTL })
	id, tok := mintFor(t, b.conn, "", "admin")
	s := restStream(t, b, tok, "", "/api/admin/cluster/watch", func() {})
	_, err := adminv1.NewAdminServiceClient(b.conn).RevokeCredential(t.Context(), &adminv1.RevokeCredentialRequest{Id: id})
	require.NoError(t, err)
	requireEnds(t, codes.Unauthenticated, s)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		"http://"+b.node.HTTPAddr()+"/api/realtime/subscribe?"+url.Values{"channels": {"room"}}.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// The REST listing shows the revoked credential's lineage: the
	// bootstrap token's call minted it.
	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet,
		"http://"+b.node.HTTPAddr()+"/api/admin/credentials?include_inactive=true", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	list, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer list.Body.Close()
	require.Equal(t, http.StatusOK, list.StatusCode)
	var body struct {
		Credentials []struct {
			ID       string `json:"id"`
			MintedBy string `json:"minted_by"`
		} `json:"credentials"`
	}
	require.NoError(t, json.NewDecoder(list.Body).Decode(&body))
	parents := map[string]string{}
	for _, c := range body.Credentials {
		parents[c.ID] = c.MintedBy
	}
	require.Contains(t, parents, id)
	require.NotEmpty(t, parents[id], "minted_by is in the REST answer")
	require.Contains(t, parents, parents[id], "its minter is listed")
	require.Empty(t, parents[parents[id]], "the bootstrap token has no minter")
}
