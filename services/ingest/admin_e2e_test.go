//go:build integration

package ingest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// TestEndpointCreatedByAdminVerifiesAtTheEdge: the secret AdminService
// seals at CreateEndpoint opens at the webhook edge (same keyring, same
// associated data), and a delivery signed with the secret it returned once
// is stored.
func TestEndpointCreatedByAdminVerifiesAtTheEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adm := admin.New(zap.NewNop(), e.pool, auth.NewStore(e.pool, auth.NewHasher(make([]byte, 32))), sources.New(e.pool, e.keys, nil))
	ctx := auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAdmin}})
	created, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS,
	}})
	require.NoError(t, err)
	require.Contains(t, created.GetSecret(), "whsec_")

	body := []byte(`{"from":"admin"}`)
	h := signStandard(t, created.GetSecret(), "msg_admin", time.Now(), body)
	code, resp := e.post(t, created.GetEndpoint().GetSlug(), body, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND event_id IS NOT NULL`))
}
