//go:build integration

package auth_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
)

// requireExhausted asserts RESOURCE_EXHAUSTED naming the limit.
func requireExhausted(t *testing.T, err error, limit string) {
	t.Helper()
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	require.Contains(t, st.Message(), "tenant.limits")
	require.Contains(t, st.Message(), limit)
}

// concurrently runs n calls of f at once and returns their errors.
func concurrently(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// succeeded counts the nil errors and checks that every other one is the
// limit's refusal.
func succeeded(t *testing.T, errs []error, limit string) int {
	t.Helper()
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
			continue
		}
		requireExhausted(t, err, limit)
	}
	return n
}

// The attack: a tenant creates agents without end. Twenty creations at once
// against a cap of five make exactly five; another tenant is not affected;
// and a caller naming a full tenant it cannot reach learns nothing of it.
func TestAgentsPerTenantAreCappedUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "ada@example.com"})
	require.NoError(t, err)
	bob, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "bob@example.com"})
	require.NoError(t, err)
	const limit = 5
	ctx := t.Context()
	create := func(as auth.Tenant, human auth.Human, name string) error {
		_, err := b.store.CreateAgent(ctx, as, auth.NewAgent{HumanID: human.ID, Name: name, Metadata: json.RawMessage(`{}`)}, limit)
		return err
	}
	adaT := auth.Tenant{HumanID: ada.ID}
	errs := concurrently(20, func(i int) error { return create(adaT, ada, fmt.Sprintf("w%d", i)) })
	require.Equal(t, limit, succeeded(t, errs, "max_agents"))
	requireExhausted(t, create(adaT, ada, "one-more"), "max_agents = 5")
	requireExhausted(t, create(auth.Tenant{Administrator: true}, ada, "by-admin"), "max_agents")
	require.NoError(t, create(auth.Tenant{HumanID: bob.ID}, bob, "w0"), "another tenant has its own count")
	require.Equal(t, codes.NotFound, code(create(auth.Tenant{HumanID: bob.ID}, ada, "x")),
		"a full tenant out of reach looks missing, as any other")

	agents, err := b.store.ListAgents(t.Context(), adaT, nil, nil, 100)
	require.NoError(t, err)
	require.NoError(t, b.store.DeleteAgent(t.Context(), adaT, agents[0].ID))
	require.NoError(t, create(adaT, ada, "after-delete"), "a deleted agent frees its place")
}

// The attack: a tenant mints credentials without end. Twenty mints at once
// against a cap of five leave exactly five live; a revoked or expired one
// frees its place.
func TestLiveCredentialsPerTenantAreCappedUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "ada@example.com"})
	require.NoError(t, err)
	adaT := auth.Tenant{HumanID: ada.ID}
	const limit = 5
	ctx := t.Context()
	mint := func(as auth.Tenant) (auth.Credential, error) {
		c, _, err := b.store.MintCredential(ctx, as, auth.NewCredential{HumanID: ada.ID, Scopes: []string{"read"}}, limit)
		return c, err
	}
	errs := concurrently(20, func(int) error { _, err := mint(adaT); return err })
	require.Equal(t, limit, succeeded(t, errs, "max_credentials"))
	_, err = mint(auth.Tenant{Administrator: true})
	requireExhausted(t, err, "max_credentials = 5")

	live, err := b.store.ListCredentials(t.Context(), adaT, auth.CredentialFilter{}, nil, 100)
	require.NoError(t, err)
	require.Len(t, live, limit)
	_, _, err = b.store.RevokeCredential(t.Context(), adaT, live[0].ID, nil)
	require.NoError(t, err)
	_, err = mint(adaT)
	require.NoError(t, err, "a revoked credential frees its place")

	_, err = b.pool.Exec(t.Context(), `UPDATE credentials SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour'
		WHERE id = $1`, live[1].ID)
	require.NoError(t, err)
	_, err = mint(adaT)
	require.NoError(t, err, "an expired credential frees its place")
	_, err = mint(adaT)
	requireExhausted(t, err, "max_credentials")
}
