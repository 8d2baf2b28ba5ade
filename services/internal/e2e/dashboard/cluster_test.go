//go:build e2e

package dashboard_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/dashboardtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// The dashboard page, in headless Chromium, against a real three-node
// cluster: one card per node, and a killed node's card goes away once its
// peers sweep it.
func TestDashboardShowsOneCardPerNode(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	a, b, c := e2etest.StartNode(t, db, "dash-a"), e2etest.StartNode(t, db, "dash-b"), e2etest.StartNode(t, db, "dash-c")
	a.WaitMembers(t, "dash-a", "dash-b", "dash-c")

	browser := dashboardtest.NewBrowser(t)
	dashboardtest.Navigate(t, browser, "http://"+b.HTTP+"/")
	dashboardtest.SetToken(t, browser, e2etest.AdminToken) // the cluster view is the administrator's
	dashboardtest.Navigate(t, browser, "http://"+b.HTTP+"/#/nodes")
	dashboardtest.WaitForCards(t, browser, []string{"dash-a", "dash-b", "dash-c"})

	require.NoError(t, c.Signal(syscall.SIGKILL))
	dashboardtest.WaitForCards(t, browser, []string{"dash-a", "dash-b"})
}
