//go:build e2e

package dashboard_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/gateway/dashboard"
	"github.com/switchboard/switchboard/services/internal/dashboardtest"
)

// The page in headless Chromium (services/internal/dashboardtest) against a
// fake registry behind the real gateway.

// screenshotEnv names a PNG file; when set, the browser test saves
// screenshots of the page with three nodes there (and at phone width beside
// it, "-phone" before the extension).
const screenshotEnv = "DASHBOARD_SCREENSHOT"

// fakeRegistry is a RegistryService whose membership the test controls.
// WatchNodes behaves like the real one: a snapshot (JOINED per node, then
// SYNCED) followed by the changes the test makes.
type fakeRegistry struct {
	registryv1.UnimplementedRegistryServiceServer

	mu    sync.Mutex
	nodes map[string]*registryv1.Node
	subs  map[chan *registryv1.WatchNodesResponse]struct{}
	// end is closed to end every open stream, which then returns endErr.
	end    chan struct{}
	endErr error
	// gate is closed while new streams may send their snapshot; hold
	// replaces it with an open one so reconnecting streams wait.
	gate chan struct{}
	// auth is the last authorization metadata seen, by method.
	auth map[string]string
	// requireToken makes every call check its token as the real API does:
	// "Bearer good" may list the cluster, "Bearer weak" is a valid token
	// without the admin scope, anything else is no valid credential. Set
	// before serve.
	requireToken bool
	// refused counts the calls refused for their token, by method.
	refused map[string]int
}

func newFakeRegistry(nodes ...*registryv1.Node) *fakeRegistry {
	f := &fakeRegistry{
		nodes: map[string]*registryv1.Node{},
		subs:  map[chan *registryv1.WatchNodesResponse]struct{}{},
		end:   make(chan struct{}),
		gate:  make(chan struct{}),
		auth:  map[string]string{},

		refused: map[string]int{},
	}
	close(f.gate)
	for _, n := range nodes {
		f.nodes[n.GetNodeId()] = n
	}
	return f
}

func (f *fakeRegistry) sortedLocked() []*registryv1.Node {
	out := slices.Collect(maps.Values(f.nodes))
	slices.SortFunc(out, func(a, b *registryv1.Node) int { return cmp.Compare(a.GetSeq(), b.GetSeq()) })
	return out
}

// noteAuth records the call's authorization metadata and, when the fake
// requires a token, returns the error the real API gives for it.
func (f *fakeRegistry) noteAuth(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	auth := strings.Join(md.Get("authorization"), ",")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth[method] = auth
	if !f.requireToken {
		return nil
	}
	var err error
	switch auth {
	case "Bearer good":
		return nil
	case "Bearer weak":
		err = apierr.PermissionDenied("the token lacks the admin scope")
	default:
		err = apierr.Unauthenticated("missing or invalid credentials")
	}
	f.refused[method]++
	return err
}

func (f *fakeRegistry) refusals(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[method]
}

func (f *fakeRegistry) lastAuth(method string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.auth[method]
}

func (f *fakeRegistry) ListNodes(ctx context.Context, _ *registryv1.ListNodesRequest) (*registryv1.ListNodesResponse, error) {
	if err := f.noteAuth(ctx, "ListNodes"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &registryv1.ListNodesResponse{Data: f.sortedLocked()}, nil
}

func (f *fakeRegistry) WatchNodes(_ *registryv1.WatchNodesRequest, stream grpc.ServerStreamingServer[registryv1.WatchNodesResponse]) error {
	ctx := stream.Context()
	if err := f.noteAuth(ctx, "WatchNodes"); err != nil {
		return err
	}
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return nil
	}

	f.mu.Lock()
	snapshot := f.sortedLocked()
	events := make(chan *registryv1.WatchNodesResponse, 64)
	f.subs[events] = struct{}{}
	end := f.end
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, events)
		f.mu.Unlock()
	}()

	for _, n := range snapshot {
		if err := stream.Send(&registryv1.WatchNodesResponse{Type: registryv1.NodeEventType_NODE_EVENT_TYPE_JOINED, Node: n}); err != nil {
			return err
		}
	}
	if err := stream.Send(&registryv1.WatchNodesResponse{Type: registryv1.NodeEventType_NODE_EVENT_TYPE_SYNCED}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			f.mu.Lock()
			err := f.endErr
			f.mu.Unlock()
			return err
		case ev := <-events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// publish applies a change and sends it to every open stream.
func (f *fakeRegistry) publish(typ registryv1.NodeEventType, n *registryv1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if typ == registryv1.NodeEventType_NODE_EVENT_TYPE_LEFT {
		delete(f.nodes, n.GetNodeId())
	} else {
		f.nodes[n.GetNodeId()] = n
	}
	for sub := range f.subs {
		select {
		case sub <- &registryv1.WatchNodesResponse{Type: typ, Node: n}:
		default: // a test that sends 64 events without reading has a bug
			panic("fakeRegistry: subscriber queue full")
		}
	}
}

// restart replaces the membership without sending events and ends every open
// stream with err (nil: the stream just ends), as a gateway node restarting
// would.
func (f *fakeRegistry) restart(err error, nodes ...*registryv1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = map[string]*registryv1.Node{}
	for _, n := range nodes {
		f.nodes[n.GetNodeId()] = n
	}
	f.endErr = err
	close(f.end)
	f.end = make(chan struct{})
}

// hold makes new streams wait before their snapshot until release.
func (f *fakeRegistry) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = make(chan struct{})
}

func (f *fakeRegistry) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.gate)
}

// serve runs the fake behind a real gRPC server and the real gateway, with
// the dashboard beside it, as a node serves them; it returns the base URL.
func serve(t *testing.T, fake *fakeRegistry) string {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	srv.Register(&registryv1.RegistryService_ServiceDesc, fake)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})

	gw, err := gateway.New(t.Context(), srv.Addr(), gateway.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })

	mux := http.NewServeMux()
	mux.Handle("/api/", gw.Handler())
	dash := dashboard.Handler()
	mux.Handle("/", dash)
	mux.Handle(dashboard.AssetPrefix, dash)
	hs := httptest.NewServer(mux)
	// Cleanups run last-in, first-out: the browser (started after serve)
	// is closed before this runs; any stream still open is cut here.
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

func node(t *testing.T, id string, seq int32, services []string, stats map[string]any) *registryv1.Node {
	t.Helper()
	s, err := structpb.NewStruct(stats)
	require.NoError(t, err)
	now := time.Now()
	return &registryv1.Node{
		NodeId:       id,
		Endpoint:     fmt.Sprintf("10.0.0.%d:9090", seq),
		Seq:          seq,
		RegisteredAt: timestamppb.New(now.Add(-time.Duration(seq) * time.Hour)),
		Heartbeat:    timestamppb.New(now.Add(-2 * time.Second)),
		Stats:        s,
		Services:     services,
	}
}

// cardView is what the test reads back from one rendered card.
type cardView struct {
	Title    string            `json:"title"`
	Endpoint string            `json:"endpoint"`
	Seq      string            `json:"seq"`
	Services []string          `json:"services"`
	Age      string            `json:"age"`
	Keys     []string          `json:"keys"`
	Values   map[string]string `json:"values"`
	Markup   int               `json:"markup"` // elements that only injected HTML could create
}

const readCards = `Object.fromEntries(Array.from(document.querySelectorAll('.node-card'), (c) => [
	c.getAttribute('data-node-id'),
	{
		title: c.querySelector('.node-id').textContent,
		endpoint: c.querySelector('.endpoint').textContent,
		seq: c.querySelector('.seq').textContent,
		services: Array.from(c.querySelectorAll('.service'), (s) => s.textContent),
		age: c.querySelector('.heartbeat-age').textContent,
		keys: Array.from(c.querySelectorAll('.stats dt'), (dt) => dt.textContent),
		values: Object.fromEntries(Array.from(c.querySelectorAll('.stats dt'), (dt) => [dt.textContent, dt.nextElementSibling.textContent])),
		markup: c.querySelectorAll('img, script, b, i').length,
	},
]))`

func cards(t *testing.T, ctx context.Context) map[string]cardView {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]cardView](readCards))
	require.NoError(t, err)
	return v
}

func text(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+jsString(selector)+`).textContent`))
	require.NoError(t, err)
	return v
}

// jsString quotes s as a JavaScript string literal (JSON is valid JS).
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

func statKeys(n *registryv1.Node) []string {
	return slices.Sorted(maps.Keys(n.GetStats().GetFields()))
}

func TestDashboardFollowsTheCluster(t *testing.T) {
	t.Parallel()
	const hostile = `<img src=x onerror="window.pwned=1">`
	a := node(t, "node-a", 1, []string{"gateway", "queue"}, map[string]any{
		"goroutines": 42, "heap_alloc": 12345678, "uptime_sec": 3725.123456,
	})
	b := node(t, "node-b", 2, []string{"ingest"}, map[string]any{
		"ws_clients": 7,
		"mesh":       map[string]any{"peers": []any{"node-a", "node-c"}, "rtt_ms": 1.5},
		"zones":      []any{"eu-1", "eu-2"},
	})
	c := node(t, hostile, 3, nil, map[string]any{
		"note": "<b>not bold</b>", "healthy": true, "last_error": nil, "tiny": 0.000123,
	})
	fake := newFakeRegistry(a, b, c)
	base := serve(t, fake)
	ctx := dashboardtest.NewBrowser(t)
	// The console asks for a token before it calls anything; this fake
	// accepts any.
	dashboardtest.Navigate(t, ctx, base+"/")
	dashboardtest.SetToken(t, ctx, "first")
	dashboardtest.Navigate(t, ctx, base+"/#/nodes")

	// Three nodes, three cards, each with exactly its own stats keys.
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", "node-b", hostile})
	dashboardtest.WaitFor(t, ctx, "live status", `document.getElementById('status').textContent === 'live'`)
	require.Equal(t, "3", text(t, ctx, "#cluster-size"))
	got := cards(t, ctx)
	for _, n := range []*registryv1.Node{a, b, c} {
		card := got[n.GetNodeId()]
		require.Equal(t, n.GetNodeId(), card.Title)
		require.Equal(t, n.GetEndpoint(), card.Endpoint)
		require.Equal(t, fmt.Sprintf("#%d", n.GetSeq()), card.Seq)
		require.Equal(t, statKeys(n), card.Keys, "card %s shows every stats key, sorted", n.GetNodeId())
		require.Regexp(t, `^\d+s ago$`, card.Age)
		require.Zero(t, card.Markup, "network strings are text, never markup")
	}
	require.Equal(t, []string{"gateway", "queue"}, got["node-a"].Services)
	require.Equal(t, []string{"no services"}, got[hostile].Services)
	require.Equal(t, "12,345,678", got["node-a"].Values["heap_alloc"])
	require.Equal(t, "3,725.12", got["node-a"].Values["uptime_sec"])
	require.JSONEq(t, `{"peers":["node-a","node-c"],"rtt_ms":1.5}`, got["node-b"].Values["mesh"])
	require.Equal(t, `["eu-1","eu-2"]`, got["node-b"].Values["zones"])
	require.Equal(t, "<b>not bold</b>", got[hostile].Values["note"])
	require.Equal(t, "true", got[hostile].Values["healthy"])
	require.Equal(t, "null", got[hostile].Values["last_error"])
	require.Equal(t, "0.000123", got[hostile].Values["tiny"])
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned === 1`))
	require.NoError(t, err)
	require.False(t, pwned)

	// Cards are ordered by seq.
	order, err := dashboardtest.CardIDs(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"node-a", "node-b", hostile}, order)

	// The heartbeat age is recomputed in the browser every second.
	age := got["node-a"].Age
	dashboardtest.WaitFor(t, ctx, "the heartbeat age to tick",
		`document.querySelector('.node-card .heartbeat-age').textContent !== `+jsString(age))

	if path := os.Getenv(screenshotEnv); path != "" {
		screenshot(t, ctx, path)
	}

	// UPDATED: new stats (a key the page has never seen) replace the old.
	a2 := node(t, "node-a", 1, []string{"gateway", "queue"}, map[string]any{
		"goroutines": 43, "heap_alloc": 2048, "queue_depth": 5,
	})
	fake.publish(registryv1.NodeEventType_NODE_EVENT_TYPE_UPDATED, a2)
	dashboardtest.WaitFor(t, ctx, "node-a's new stats",
		`Array.from(document.querySelectorAll('.node-card[data-node-id="node-a"] .stats dt'), (dt) => dt.textContent).join() === 'goroutines,heap_alloc,queue_depth'`)
	require.Equal(t, "2,048", cards(t, ctx)["node-a"].Values["heap_alloc"])

	// LEFT: the card goes.
	fake.publish(registryv1.NodeEventType_NODE_EVENT_TYPE_LEFT, b)
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", hostile})
	require.Equal(t, "2", text(t, ctx, "#cluster-size"))

	// JOINED after the snapshot: a card appears.
	d := node(t, "node-d", 4, []string{"realtime"}, map[string]any{"subscribers": 12})
	fake.publish(registryv1.NodeEventType_NODE_EVENT_TYPE_JOINED, d)
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", hostile, "node-d"})

	// The server ends the stream (a restart) and comes back with another
	// membership: the page says so, keeps the old cards meanwhile, then
	// reconnects and shows the new set from the fresh snapshot.
	fake.hold()
	e := node(t, "node-e", 5, []string{"gateway"}, map[string]any{"goroutines": 9})
	f := node(t, "node-f", 6, []string{"queue"}, map[string]any{"claims": 100})
	fake.restart(nil, e, f)
	dashboardtest.WaitFor(t, ctx, "reconnecting status",
		`document.getElementById('status').textContent === 'reconnecting…'`)
	order, err = dashboardtest.CardIDs(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"node-a", hostile, "node-d"}, order, "old cards stay until the new snapshot")
	fake.release()
	dashboardtest.WaitForCards(t, ctx, []string{"node-e", "node-f"})
	dashboardtest.WaitFor(t, ctx, "live status again", `document.getElementById('status').textContent === 'live'`)
	require.Equal(t, "2", text(t, ctx, "#cluster-size"))

	// A stream that ends with an error line (a draining server) is retried too.
	g := node(t, "node-g", 7, []string{"ingest"}, map[string]any{"events": 1})
	fake.restart(apierr.Unavailable("server is shutting down; reconnect"), g)
	dashboardtest.WaitForCards(t, ctx, []string{"node-g"})
	require.Equal(t, "1", text(t, ctx, "#cluster-size"))

	// The bearer token in localStorage goes on both requests.
	require.Equal(t, "Bearer first", fake.lastAuth("ListNodes"))
	require.Equal(t, "Bearer first", fake.lastAuth("WatchNodes"))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`localStorage.setItem('switchboard_token', 's3cret')`))
	require.NoError(t, err)
	dashboardtest.Reload(t, ctx)
	dashboardtest.WaitForCards(t, ctx, []string{"node-g"})
	dashboardtest.WaitFor(t, ctx, "live status after reload", `document.getElementById('status').textContent === 'live'`)
	require.Equal(t, "Bearer s3cret", fake.lastAuth("ListNodes"))
	require.Equal(t, "Bearer s3cret", fake.lastAuth("WatchNodes"))
}

// The sign-in panel's messages, as the page's text (commands are <code>).
const (
	signInUnauthenticated = "Paste a token (switchboard token create --admin, or the token make run printed)."
	// viewForbidden is the nodes view's own message for a 403: a token
	// that may not see the cluster may still use the console's other views,
	// so it is not signed out.
	viewForbidden = "This token may not view the cluster: it needs the admin scope of an administrator."
)

// signInScreenshotEnv names a PNG file; when set, the sign-in test saves
// screenshots of the sign-in panel there (as screenshotEnv does).
const signInScreenshotEnv = "DASHBOARD_SIGNIN_SCREENSHOT"

// signInState is what the test reads back about the sign-in panel.
type signInState struct {
	Shown    bool   `json:"shown"`
	Message  string `json:"message"`
	Status   string `json:"status"`
	SignOut  bool   `json:"signOut"` // the top bar's sign-out button is shown
	Stored   string `json:"stored"`  // localStorage's token, "" when none
	Cards    int    `json:"cards"`
	Size     string `json:"size"`
	Focused  bool   `json:"focused"` // the token field has focus
	Type     string `json:"type"`
	Complete string `json:"complete"`
	Label    string `json:"label"`
}

const readSignIn = `(() => {
	const form = document.getElementById('signin');
	const input = document.getElementById('token');
	return {
		shown: !form.hidden && form.getClientRects().length > 0,
		message: document.getElementById('signin-message').textContent,
		status: document.getElementById('status').textContent,
		signOut: !document.getElementById('signout').hidden,
		stored: localStorage.getItem('switchboard_token') || '',
		cards: document.querySelectorAll('.node-card').length,
		size: (document.getElementById('cluster-size') || {textContent: '0'}).textContent,
		focused: document.activeElement === input,
		type: input.type,
		complete: input.getAttribute('autocomplete'),
		label: input.labels.length ? input.labels[0].textContent : '',
	};
})()`

func signIn(t *testing.T, ctx context.Context) signInState {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[signInState](readSignIn))
	require.NoError(t, err)
	return v
}

// panelShows is a WaitFor expression: the sign-in panel is shown with message.
func panelShows(message string) string {
	return `!document.getElementById('signin').hidden && document.getElementById('signin-message').textContent === ` + jsString(message)
}

// viewRefuses is a WaitFor expression: the nodes view shows its 403 message
// and no card, with the sign-in panel hidden.
const viewRefuses = `document.getElementById('signin').hidden && document.querySelectorAll('.node-card').length === 0 &&
	Array.from(document.querySelectorAll('#view .notice'), (n) => n.textContent).includes(` + "`" + viewForbidden + "`" + `)`

// typeToken types token into the sign-in form and submits it with the
// button, as a user would. The field starts empty: the page clears it
// whenever it shows the panel.
func typeToken(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	field, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('token').value`))
	require.NoError(t, err)
	require.Empty(t, field, "a refused token is not left in the field")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)),
	))
}

func TestDashboardSignIn(t *testing.T) {
	t.Parallel()
	a := node(t, "node-a", 1, []string{"gateway"}, map[string]any{"goroutines": 42})
	b := node(t, "node-b", 2, []string{"queue"}, map[string]any{"claims": 3})
	fake := newFakeRegistry(a, b)
	fake.requireToken = true
	base := serve(t, fake)
	ctx := dashboardtest.NewBrowser(t)
	dashboardtest.Navigate(t, ctx, base+"/#/nodes")

	// No token: the page asks for one at once, and calls nothing.
	dashboardtest.WaitFor(t, ctx, "the sign-in panel", panelShows(signInUnauthenticated))
	dashboardtest.WaitFor(t, ctx, "the signed-out status", `document.getElementById('status').textContent === 'signed out'`)
	got := signIn(t, ctx)
	require.Equal(t, signInState{
		Shown: true, Message: signInUnauthenticated, Status: "signed out", Cards: 0, Size: "0", Focused: true,
		Type: "password", Complete: "off", Label: "Token",
	}, got)
	if path := os.Getenv(signInScreenshotEnv); path != "" {
		screenshot(t, ctx, path)
	}
	require.Zero(t, fake.refusals("WatchNodes"))
	require.Zero(t, fake.refusals("ListNodes"))

	// A token the API does not know: 401, the panel again, marked invalid,
	// and the refused watch is not retried.
	typeToken(t, ctx, "bogus")
	dashboardtest.WaitFor(t, ctx, "the sign-in panel (401)",
		panelShows(signInUnauthenticated)+` && document.getElementById('token').getAttribute('aria-invalid') === 'true'`)
	require.Eventually(t, func() bool { return fake.refusals("WatchNodes") == 1 }, dashboardtest.WaitTimeout, 10*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // longer than the first reconnect delay
	require.Equal(t, 1, fake.refusals("WatchNodes"), "a refused credential is not retried")

	// A valid token without the admin scope: the view explains the 403 and
	// the console stays signed in (its other views may be allowed).
	typeToken(t, ctx, "weak")
	dashboardtest.WaitFor(t, ctx, "the nodes view's 403 message", viewRefuses)
	require.Eventually(t, func() bool { return fake.lastAuth("WatchNodes") == "Bearer weak" }, dashboardtest.WaitTimeout, 10*time.Millisecond)
	dashboardtest.WaitFor(t, ctx, "the refused status", `document.getElementById('status').textContent === 'refused'`)
	got = signIn(t, ctx)
	require.False(t, got.Shown)
	require.Zero(t, got.Cards)
	require.True(t, got.SignOut, "a stored token can be signed out")
	require.Equal(t, "weak", got.Stored)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout"))))
	dashboardtest.WaitFor(t, ctx, "the sign-in panel after signing out the weak token", panelShows(signInUnauthenticated))

	// An administrator's token: the cards, and the panel goes.
	typeToken(t, ctx, "good")
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", "node-b"})
	dashboardtest.WaitFor(t, ctx, "live status", `document.getElementById('status').textContent === 'live'`)
	got = signIn(t, ctx)
	require.False(t, got.Shown)
	require.True(t, got.SignOut)
	require.Equal(t, "good", got.Stored)
	require.Equal(t, "2", got.Size)
	require.Equal(t, "Bearer good", fake.lastAuth("ListNodes"))
	require.Equal(t, "Bearer good", fake.lastAuth("WatchNodes"))

	// The stored token is used on the next visit: no panel.
	dashboardtest.Reload(t, ctx)
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", "node-b"})
	dashboardtest.WaitFor(t, ctx, "live status after reload", `document.getElementById('status').textContent === 'live'`)
	require.False(t, signIn(t, ctx).Shown)

	// Updates still flow after signing in.
	c := node(t, "node-c", 3, nil, map[string]any{"events": 1})
	fake.publish(registryv1.NodeEventType_NODE_EVENT_TYPE_JOINED, c)
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", "node-b", "node-c"})

	// A stream the server ends for the credential (its scope was revoked):
	// the view's 403 message and no cards, not a reconnect.
	fake.restart(apierr.PermissionDenied("the token lacks the admin scope"), a, b, c)
	dashboardtest.WaitFor(t, ctx, "the view's 403 message after a refused stream", viewRefuses)
	dashboardtest.WaitForCards(t, ctx, []string{})

	// Reload, then sign out: the token is gone and the panel is back.
	dashboardtest.Reload(t, ctx)
	dashboardtest.WaitForCards(t, ctx, []string{"node-a", "node-b", "node-c"})
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("signout"))))
	dashboardtest.WaitFor(t, ctx, "the sign-in panel after signing out", panelShows(signInUnauthenticated))
	got = signIn(t, ctx)
	require.Equal(t, signInState{
		Shown: true, Message: signInUnauthenticated, Status: "signed out", Cards: 0, Size: "0", Focused: true,
		Type: "password", Complete: "off", Label: "Token",
	}, got)
}

// screenshot saves the page at desktop width to path and at phone width
// beside it.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	shoot := func(width, height int64, to string) {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, height)))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, png, 0o644))
		t.Logf("screenshot %dx%d: %s", width, height, to)
	}
	shoot(1280, 800, path)
	ext := filepath.Ext(path)
	shoot(390, 844, strings.TrimSuffix(path, ext)+"-phone"+ext)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
}
