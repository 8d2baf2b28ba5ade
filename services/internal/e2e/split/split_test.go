//go:build e2e

package split

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

const queueName = "split"

// TestSplitTopologyRoutesByTheRegistry runs one process per service and
// drives a journey over REST through the gateway alone: a signed webhook
// (forwarded to the ingest process) → its todo claimed and completed (the
// queue process) → a realtime event over a REST stream (the realtime
// process), and the webhook's and todo's lifecycle events on a live one, with the admin and registry routes on their own processes. Then
// the queue process is killed and another started, and once the registry
// shows the change the journey works again.
func TestSplitTopologyRoutesByTheRegistry(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	mint := exec.CommandContext(t.Context(), e2etest.Binary(), "token", "create", "--admin") //nolint:gosec // our own binary
	mint.Env = []string{"DATABASE_URL=" + dbURL}
	out, err := mint.Output()
	require.NoError(t, err)
	admin := strings.TrimSpace(string(out))

	gw := serve(t, dbURL, "gateway-1", "gateway")
	for _, s := range []string{"registry", "admin", "ingest", "realtime"} {
		serve(t, dbURL, s+"-1", s)
	}
	queue1 := serve(t, dbURL, "queue-1", "queue")
	c := &client{t: t, base: "http://" + gw.http}
	c.waitCluster(admin, []string{"gateway-1", "registry-1", "admin-1", "ingest-1", "realtime-1", "queue-1"}, nil)
	// The gateway's view of the registry trails the table by up to one
	// watch interval: wait until it routes to the admin node too.
	require.Eventually(t, func() bool {
		code, _, err := c.try(t.Context(), admin, http.MethodGet, "/api/admin/humans", nil, nil)
		return err == nil && code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the gateway never routed to the admin node")

	// The tenant, as an operator makes it over REST: a human, an agent, its
	// credential, and an endpoint whose todos go to that agent.
	var human, agent struct {
		ID string `json:"id"`
	}
	c.call(admin, http.MethodPost, "/api/admin/humans", `{"email":"split@example.com"}`, http.StatusOK, &struct {
		Human any `json:"human"`
	}{&human})
	c.call(admin, http.MethodPost, "/api/admin/agents", fmt.Sprintf(`{"human_id":%q,"name":"split"}`, human.ID),
		http.StatusOK, &struct {
			Agent any `json:"agent"`
		}{&agent})
	var cred struct {
		Token string `json:"token"`
	}
	c.call(admin, http.MethodPost, "/api/admin/credentials",
		fmt.Sprintf(`{"human_id":%q,"agent_id":%q,"scopes":["agent","publisher"]}`, human.ID, agent.ID), http.StatusOK, &cred)
	var ep struct {
		Endpoint struct {
			Slug string `json:"slug"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	c.call(admin, http.MethodPost, "/api/admin/endpoints", fmt.Sprintf(
		`{"human_id":%q,"agent_id":%q,"name":"split","queue":%q,"verification":"VERIFICATION_SCHEME_STANDARD_WEBHOOKS"}`,
		human.ID, agent.ID, queueName), http.StatusOK, &ep)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ep.Secret, "whsec_"))
	require.NoError(t, err)

	c.journey(cred.Token, ep.Endpoint.Slug, key, "first")

	queue1.kill()
	serve(t, dbURL, "queue-2", "queue")
	c.waitCluster(admin, []string{"queue-2"}, []string{"queue-1"})
	c.journey(cred.Token, ep.Endpoint.Slug, key, "second")
}

// client is REST through the gateway.
type client struct {
	t    *testing.T
	base string
}

// do sends one request and returns the status and body.
func (c *client) do(ctx context.Context, token, method, path string, body []byte, header http.Header) (int, []byte) {
	c.t.Helper()
	code, b, err := c.try(ctx, token, method, path, body, header)
	require.NoError(c.t, err)
	return code, b
}

// try is do for polling: an error is returned, not fatal.
func (c *client) try(ctx context.Context, token, method, path string, body []byte, header http.Header) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// call sends body as JSON, requires want and decodes the answer into out.
func (c *client) call(token, method, path, body string, want int, out any) {
	c.t.Helper()
	code, b := c.do(c.t.Context(), token, method, path, []byte(body), nil)
	require.Equal(c.t, want, code, "%s %s: %s", method, path, b)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(b, out), "%s %s: %s", method, path, b)
	}
}

// waitCluster waits until the registry, asked through the gateway, lists
// every node of present and none of gone.
func (c *client) waitCluster(admin string, present, gone []string) {
	c.t.Helper()
	var last string
	require.Eventually(c.t, func() bool {
		code, b, err := c.try(c.t.Context(), admin, http.MethodGet, "/api/admin/cluster", nil, nil)
		last = fmt.Sprintf("HTTP %d: %s (%v)", code, b, err)
		if err != nil || code != http.StatusOK {
			return false
		}
		var list struct {
			Data []struct {
				NodeID string `json:"node_id"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &list) != nil {
			return false
		}
		var ids []string
		for _, n := range list.Data {
			ids = append(ids, n.NodeID)
		}
		for _, id := range present {
			if !slices.Contains(ids, id) {
				return false
			}
		}
		for _, id := range gone {
			if slices.Contains(ids, id) {
				return false
			}
		}
		return true
	}, 45*time.Second, 50*time.Millisecond, "cluster never showed %v without %v; last answer %s", present, gone, last)
}

// journey: a signed webhook to the gateway → its todo, claimed and
// completed → a durable realtime event read back from a REST stream; and
// the lifecycle events of that webhook and todo (published by the ingest
// and queue processes, which run no realtime) on a live stream.
func (c *client) journey(token, slug string, key []byte, tag string) {
	c.t.Helper()
	lifecycle := c.watchLifecycle(token)
	defer lifecycle.close()
	lifecycle.waitListened(token)
	body := []byte(fmt.Sprintf(`{"journey":%q}`, tag))
	id, ts := "split-"+tag, strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	sig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	hdr := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
	// The gateway's view of the registry trails the table by up to one
	// watch interval: a sender gets 503 with Retry-After until it sees the
	// ingest node, and retries, as senders do (the delivery id makes a
	// retry safe).
	var code int
	var b []byte
	require.Eventually(c.t, func() bool {
		var err error
		code, b, err = c.try(c.t.Context(), "", http.MethodPost, "/hooks/"+slug, body, hdr)
		return err == nil && code != http.StatusServiceUnavailable
	}, 10*time.Second, 50*time.Millisecond, "webhook answered 503 throughout: %s", b)
	require.Equal(c.t, http.StatusOK, code, "webhook: %s", b)
	require.Contains(c.t, string(b), `"accepted"`)

	var claimed struct {
		Todos []struct {
			ID         string          `json:"id"`
			LeaseToken string          `json:"lease_token"`
			Payload    json.RawMessage `json:"payload"`
		} `json:"todos"`
	}
	c.call(token, http.MethodPost, "/api/queues/"+queueName+":claim", `{"worker_id":"split","max_todos":1,"wait":"10s"}`,
		http.StatusOK, &claimed)
	require.Len(c.t, claimed.Todos, 1, "the webhook's todo")
	todo := claimed.Todos[0]
	c.call(token, http.MethodPost, "/api/todos/"+todo.ID+":complete", fmt.Sprintf(`{"lease_token":%q}`, todo.LeaseToken),
		http.StatusOK, nil)
	var got struct {
		Todo struct {
			State string `json:"state"`
		} `json:"todo"`
	}
	c.call(token, http.MethodGet, "/api/todos/"+todo.ID, "", http.StatusOK, &got)
	require.Equal(c.t, "TODO_STATE_COMPLETED", got.Todo.State)
	lifecycle.requireTodoLifecycle(todo.ID)

	// Two durable events; a subscription after the first replays the
	// second (after_id 0 would mean live only).
	channel := "split." + tag
	var first struct {
		ID string `json:"id"`
	}
	c.call(token, http.MethodPost, "/api/realtime/channels/"+channel+"/messages",
		`{"kind":"start","durable":true}`, http.StatusOK, &first)
	c.call(token, http.MethodPost, "/api/realtime/channels/"+channel+"/messages",
		fmt.Sprintf(`{"kind":"done","durable":true,"payload":{"todo_id":%q}}`, todo.ID), http.StatusOK, nil)
	after, err := strconv.ParseInt(first.ID, 10, 64)
	require.NoError(c.t, err)
	c.requireStreamed(token, channel, after, todo.ID)
}

// requireStreamed subscribes over REST (NDJSON) to channel after afterID
// (a replay, then live) and requires the first event to carry todoID.
func (c *client) requireStreamed(token, channel string, afterID int64, todoID string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/realtime/subscribe?channels="+channel+"&after_id="+strconv.FormatInt(afterID, 10), nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Result struct {
				Event *struct {
					Kind    string         `json:"kind"`
					Payload map[string]any `json:"payload"`
				} `json:"event"`
			} `json:"result"`
		}
		require.NoError(c.t, json.Unmarshal(sc.Bytes(), &line), "%s", sc.Bytes())
		if e := line.Result.Event; e != nil {
			require.Equal(c.t, "done", e.Kind)
			require.Equal(c.t, todoID, e.Payload["todo_id"])
			return
		}
	}
	c.t.Fatalf("the subscription ended without the event: %v", sc.Err())
}
