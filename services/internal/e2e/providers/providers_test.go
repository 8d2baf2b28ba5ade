//go:build e2e

package providers_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// sample is a provider page's "Try it" shell block, between its markers.
var sample = regexp.MustCompile("(?s)<!-- sample:begin -->\\s*```sh\\n(.*?)```\\s*<!-- sample:end -->")

// providerSamples is what each page's sample must print: the answers a user
// pasting it should see. A page without an entry here fails the test, so a
// new page cannot go untested.
var providerSamples = map[string][]string{
	"github.md": {
		`{"status":"accepted","event_id":"`, `{"status":"duplicate"}`,
		`"topic":"pull_request","delivery_id":"72d3162e-cc78-11e3-81ab-4c9367dc0958"`,
	},
	"stripe.md": {
		`"has_secret":true`, `{"status":"accepted","event_id":"`, `{"status":"duplicate"}`,
		`"topic":"invoice.paid","delivery_id":"evt_1NG8Du2eZvKYlo2CUI79vXWy"`,
	},
	"slack.md": {
		`{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, `{"status":"accepted","event_id":"`,
		`"topic":"app_mention","delivery_id":"Ev123ABC456"`,
	},
	"shopify.md": {
		`{"status":"accepted","event_id":"`,
		`"topic":"orders/create","delivery_id":"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"`,
	},
	"standard-webhooks.md": {
		`{"status":"accepted","event_id":"`, `"topic":"user.created","delivery_id":"msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"`,
	},
	"zoom.md": {
		`"plainToken":"qgg8vlvZRS6UYooatFL8Aw"`, "encryptedToken is right", `{"status":"accepted","event_id":"`,
		`"topic":"meeting.started"`,
	},
	"x.md": {"response_token is right", `{"status":"accepted","event_id":"`, `"topic":"tweet_create_events"`},
	"meta.md": {
		"1158201444", "403 for a wrong verify token", `{"status":"accepted","event_id":"`,
		`"topic":"whatsapp_business_account`,
	},
	"msgraph.md": {
		"Validation: Testing client application reachability for subscription Request-Id: 25b8c2b0-f4ad-4bb2-8d0c-6c0b9cb5b0ac",
		`{"status":"accepted","event_id":"`, "401 for a wrong clientState", `"topic":"created"`,
	},
	"twilio.md": {
		`{"public_url":"http`, `{"status":"accepted","event_id":"`,
		`"delivery_id":"5d2a6c1e-4b0f-4f8e-9c3a-7b6d5e4f3a2b"`,
	},
	"generic-hmac.md": {`{"status":"accepted","event_id":"`, `"topic":"invoice.overdue","delivery_id":"d-4711"`},
}

// Every provider page's sample, run as written (bash -e) against one live
// node, so the set-up a user pastes cannot rot. Each sample creates its own
// endpoint; API and ADMIN point it at this node instead of make run's.
func TestProviderSamples(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "providers", "*.md"))
	require.NoError(t, err)
	n := e2etest.StartNode(t, pgtest.NewDatabase(t), "providers")
	seen := map[string]bool{}
	for _, page := range pages {
		name := filepath.Base(page)
		if name == "README.md" {
			continue
		}
		seen[name] = true
		t.Run(strings.TrimSuffix(name, ".md"), func(t *testing.T) {
			t.Parallel()
			want, ok := providerSamples[name]
			require.True(t, ok, "docs/providers/%s has no expected output in providerSamples", name)
			text, err := os.ReadFile(page)
			require.NoError(t, err)
			m := sample.FindSubmatch(text)
			require.NotNil(t, m, "docs/providers/%s has no sample block", name)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", string(m[1]))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "API=http://"+n.HTTP, "ADMIN="+e2etest.AdminToken)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the sample of docs/providers/%s failed:\n%s", name, out)
			for _, w := range want {
				require.Contains(t, string(out), w, "docs/providers/%s", name)
			}
		})
	}
	for name := range providerSamples {
		require.True(t, seen[name], "providerSamples names docs/providers/%s, which does not exist", name)
	}
}
