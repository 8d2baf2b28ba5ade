//go:build integration

package node_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/config"
)

// The access matrix (access_test.go) against a running node: each caller
// holds a real credential in a real database.

// callers is every kind of caller the matrix names, each tried on every RPC.
var callers = []string{anonymous, reader, publisher, agent, tenantAdmin, administrator}

// mintFixtures creates a tenant with an agent, a credential per caller kind,
// and an administrator, directly in SQL (the admin RPCs have their own tests).
func mintFixtures(t *testing.T, db string, hasher *auth.Hasher) map[string]string {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), db)
	require.NoError(t, err)
	defer pool.Close()
	var tenant, admin, agentID string
	require.NoError(t, pool.QueryRow(t.Context(),
		"INSERT INTO humans (email) VALUES ('tenant@example.com') RETURNING id::text").Scan(&tenant))
	require.NoError(t, pool.QueryRow(t.Context(),
		"INSERT INTO humans (email, is_admin) VALUES ('ops@example.com', true) RETURNING id::text").Scan(&admin))
	require.NoError(t, pool.QueryRow(t.Context(),
		"INSERT INTO agents (human_id, name) VALUES ($1, 'worker') RETURNING id::text", tenant).Scan(&agentID))
	tokens := map[string]string{}
	mint := func(caller, human string, agentID *string, scope string) {
		tok, display, err := auth.NewToken()
		require.NoError(t, err)
		_, err = pool.Exec(t.Context(),
			"INSERT INTO credentials (human_id, agent_id, token_prefix, token_hash, scopes) VALUES ($1, $2, $3, $4, $5)",
			human, agentID, display, hasher.Hash(tok), []string{scope})
		require.NoError(t, err)
		tokens[caller] = tok
	}
	mint(reader, tenant, nil, "read")
	mint(publisher, tenant, nil, "publisher")
	mint(agent, tenant, &agentID, "agent")
	mint(tenantAdmin, tenant, nil, "admin")
	mint(administrator, admin, nil, "admin")
	return tokens
}

// call invokes method with an empty request (unary or server-streaming) and
// returns the status code of the first answer.
func call(ctx context.Context, conn *grpc.ClientConn, name string, m protoreflect.MethodDescriptor) codes.Code {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
	if err != nil {
		return codes.Internal
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName())
	if err != nil {
		return codes.Internal
	}
	req, resp := in.New().Interface(), out.New().Interface()
	if !m.IsStreamingServer() {
		return status.Code(conn.Invoke(ctx, name, req, resp))
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, name)
	if err != nil {
		return status.Code(err)
	}
	if err := stream.SendMsg(req); err != nil {
		return status.Code(err)
	}
	if err := stream.CloseSend(); err != nil {
		return status.Code(err)
	}
	return status.Code(stream.RecvMsg(resp))
}

// Every RPC of every service, called by every kind of caller: the allowed
// ones get past authorization (whatever the handler then says), the others
// get UNAUTHENTICATED (no credential) or PERMISSION_DENIED.
func TestEveryRPCEnforcesItsScopes(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) {
		cfg.Auth.SecretKey = []byte("access matrix test key, 32 bytes or more")
	})
	tokens := mintFixtures(t, b.db, auth.NewHasher([]byte("access matrix test key, 32 bytes or more")))
	conns := map[string]*grpc.ClientConn{}
	for _, caller := range callers {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if tok, ok := tokens[caller]; ok {
			opts = append(opts, grpc.WithPerRPCCredentials(auth.Bearer{Token: tok, AllowInsecure: true}))
		}
		conn, err := grpc.NewClient(b.node.GRPCAddr(), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		conns[caller] = conn
	}
	for name, m := range allMethods() {
		allowed := accessMatrix[name]
		for _, caller := range callers {
			got := call(t.Context(), conns[caller], name, m)
			switch {
			case contains(allowed, caller):
				require.NotContains(t, []codes.Code{codes.Unauthenticated, codes.PermissionDenied}, got,
					"%s as %s: should be allowed", name, caller)
			case caller == anonymous:
				require.Equal(t, codes.Unauthenticated, got, "%s as %s", name, caller)
			default:
				require.Equal(t, codes.PermissionDenied, got, "%s as %s", name, caller)
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// The gateway forwards Authorization and maps the outcomes to HTTP.
func TestGatewayAnswers401And403(t *testing.T) {
	t.Parallel()
	key := []byte("gateway auth test key, 32 bytes or more")
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.SecretKey = key })
	tokens := mintFixtures(t, b.db, auth.NewHasher(key))
	get := func(path, token string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+b.node.HTTPAddr()+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get("/health", ""), "health is open")
	require.Equal(t, http.StatusUnauthorized, get("/api/admin/cluster", ""))
	require.Equal(t, http.StatusUnauthorized, get("/api/admin/cluster", "sbt_not-a-token"))
	require.Equal(t, http.StatusForbidden, get("/api/admin/cluster", tokens[reader]))
	require.Equal(t, http.StatusForbidden, get("/api/admin/cluster", tokens[tenantAdmin]))
	require.Equal(t, http.StatusOK, get("/api/admin/cluster", tokens[administrator]))
}

// The whole credential life cycle through the RPCs: an administrator creates
// a tenant and mints it a token; the token works; once revoked it stops
// working within the cache TTL; and it never reaches another tenant.
func TestMintUseRevokeThroughTheAPI(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.Auth.CacheTTL = ttl })
	admin := adminv1.NewAdminServiceClient(b.conn) // the bootstrap administrator

	newTenant := func(email string) (humanID, token string) {
		h, err := admin.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: email}})
		require.NoError(t, err)
		m, err := admin.MintCredential(t.Context(), &adminv1.MintCredentialRequest{
			HumanId: h.GetHuman().GetId(), Scopes: []string{"admin"}, Name: "tenant admin",
		})
		require.NoError(t, err)
		require.Equal(t, m.GetToken()[:auth.DisplayPrefixLen], m.GetCredential().GetTokenPrefix())
		return h.GetHuman().GetId(), m.GetToken()
	}
	_, tokenA := newTenant("a@example.com")
	humanB, _ := newTenant("b@example.com")
	agentB, err := admin.CreateAgent(t.Context(), &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: humanB, Name: "b-worker"}})
	require.NoError(t, err)

	conn, err := grpc.NewClient(b.node.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: tokenA, AllowInsecure: true}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	asA := adminv1.NewAdminServiceClient(conn)

	list, err := asA.ListAgents(t.Context(), &adminv1.ListAgentsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetAgents(), "tenant A sees none of B's agents")
	_, err = asA.GetAgent(t.Context(), &adminv1.GetAgentRequest{Id: agentB.GetAgent().GetId()})
	require.Equal(t, codes.NotFound, status.Code(err), "B's agent does not exist for A")
	_, err = asA.MintCredential(t.Context(), &adminv1.MintCredentialRequest{HumanId: humanB, Scopes: []string{"admin"}})
	require.Equal(t, codes.NotFound, status.Code(err), "A cannot mint for B")
	_, err = asA.CreateHuman(t.Context(), &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: "c@example.com"}})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "tenants are the administrator's")

	creds, err := admin.ListCredentials(t.Context(), &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	var idA string
	for _, c := range creds.GetCredentials() {
		if tokenA[:auth.DisplayPrefixLen] == c.GetTokenPrefix() {
			idA = c.GetId()
		}
	}
	require.NotEmpty(t, idA)
	_, err = admin.RevokeCredential(t.Context(), &adminv1.RevokeCredentialRequest{Id: idA})
	require.NoError(t, err)
	revoked := time.Now()
	require.Eventually(t, func() bool {
		_, err := asA.ListAgents(t.Context(), &adminv1.ListAgentsRequest{})
		return status.Code(err) == codes.Unauthenticated
	}, time.Minute, 10*time.Millisecond) // a safety net: refused once the cache entry expires
	t.Logf("revoked token refused after %s (cache TTL %s)", time.Since(revoked), ttl)
}
