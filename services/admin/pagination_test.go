//go:build integration

package admin_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
)

// pageThrough calls list with page size 3 until the last page and returns
// every page's ids; the lists below hold 7 rows, so 3 pages.
func pageThrough(t *testing.T, list func(token string) ([]string, string, error)) [][]string {
	t.Helper()
	var pages [][]string
	token := ""
	for range 10 {
		ids, next, err := list(token)
		require.NoError(t, err)
		pages = append(pages, ids)
		if next == "" {
			return pages
		}
		token = next
	}
	t.Fatal("pagination did not end")
	return nil
}

// requirePages checks 3 pages of 3, 3 and 1, no duplicates, the same order
// as one big page, and a stable result when walked again.
func requirePages(t *testing.T, all []string, list func(token string) ([]string, string, error)) {
	t.Helper()
	pages := pageThrough(t, list)
	require.Len(t, pages, 3)
	require.Len(t, pages[0], 3)
	require.Len(t, pages[1], 3)
	require.Len(t, pages[2], 1)
	var flat []string
	for _, p := range pages {
		flat = append(flat, p...)
	}
	require.Equal(t, all, flat)
	seen := map[string]bool{}
	for _, id := range flat {
		require.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
	}
	require.Equal(t, pages, pageThrough(t, list), "walking again gives the same pages")
}

func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.rootCtx(t)
	// 6 more humans (7 with root); 7 agents and 7 credentials for one of them,
	// plus one of each for another human that the filters must leave out.
	var humanIDs []string
	humanIDs = append(humanIDs, e.root.String())
	for i := range 6 {
		h, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: fmt.Sprintf("h%d@example.test", i)}})
		require.NoError(t, err)
		humanIDs = append(humanIDs, h.GetHuman().GetId())
	}
	owner := humanIDs[1]
	var agentIDs, credIDs []string
	for i := range 7 {
		a, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: owner, Name: fmt.Sprintf("agent-%d", i)}})
		require.NoError(t, err)
		agentIDs = append(agentIDs, a.GetAgent().GetId())
		c, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: owner, Scopes: []string{"read"}})
		require.NoError(t, err)
		credIDs = append([]string{c.GetCredential().GetId()}, credIDs...) // newest first
	}
	_, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: humanIDs[2], Name: "elsewhere"}})
	require.NoError(t, err)
	_, err = e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: humanIDs[2], Scopes: []string{"read"}})
	require.NoError(t, err)

	t.Run("humans", func(t *testing.T) {
		t.Parallel()
		requirePages(t, humanIDs, func(tok string) ([]string, string, error) {
			r, err := e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{PageSize: 3, PageToken: tok})
			ids := make([]string, 0, len(r.GetHumans()))
			for _, h := range r.GetHumans() {
				ids = append(ids, h.GetId())
			}
			return ids, r.GetNextPageToken(), err
		})
	})
	t.Run("agents", func(t *testing.T) {
		t.Parallel()
		requirePages(t, agentIDs, func(tok string) ([]string, string, error) {
			r, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{HumanId: owner, PageSize: 3, PageToken: tok})
			ids := make([]string, 0, len(r.GetAgents()))
			for _, a := range r.GetAgents() {
				ids = append(ids, a.GetId())
			}
			return ids, r.GetNextPageToken(), err
		})
	})
	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		requirePages(t, credIDs, func(tok string) ([]string, string, error) {
			r, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{HumanId: owner, PageSize: 3, PageToken: tok})
			return credentialIDs(r.GetCredentials()), r.GetNextPageToken(), err
		})
	})
	t.Run("default page size holds everything", func(t *testing.T) {
		t.Parallel()
		r, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{})
		require.NoError(t, err)
		require.Len(t, r.GetAgents(), 8)
		require.Empty(t, r.GetNextPageToken())
	})
	t.Run("a token is bound to its list and filters", func(t *testing.T) {
		t.Parallel()
		first, err := e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{HumanId: owner, PageSize: 3})
		require.NoError(t, err)
		require.NotEmpty(t, first.GetNextPageToken())
		_, err = e.srv.ListAgents(ctx, &adminv1.ListAgentsRequest{PageSize: 3, PageToken: first.GetNextPageToken()})
		requireInvalid(t, err, "page_token")
		_, err = e.srv.ListHumans(ctx, &adminv1.ListHumansRequest{PageToken: first.GetNextPageToken()})
		requireInvalid(t, err, "page_token")
		creds, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{HumanId: owner, PageSize: 3})
		require.NoError(t, err)
		_, err = e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{HumanId: owner, IncludeInactive: true, PageToken: creds.GetNextPageToken()})
		requireInvalid(t, err, "page_token")
	})
}
