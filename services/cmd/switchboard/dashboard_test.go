//go:build integration

package main_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/dashboardtest"
)

// The dashboard page, in headless Chromium, against a real three-node
// cluster: one card per node, and a killed node's card goes away once its
// peers sweep it.
func TestDashboardShowsOneCardPerNode(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	a, b, c := startNode(t, db, "dash-a"), startNode(t, db, "dash-b"), startNode(t, db, "dash-c")
	a.waitMembers(t, "dash-a", "dash-b", "dash-c")

	browser := dashboardtest.NewBrowser(t)
	dashboardtest.Navigate(t, browser, "http://"+b.http+"/")
	dashboardtest.SetToken(t, browser, adminToken) // the cluster view is the administrator's
	dashboardtest.Navigate(t, browser, "http://"+b.http+"/#/nodes")
	dashboardtest.WaitForCards(t, browser, []string{"dash-a", "dash-b", "dash-c"})

	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	dashboardtest.WaitForCards(t, browser, []string{"dash-a", "dash-b"})
}
