//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// queueName is the queue every scenario uses (each has its own database).
const queueName = "chaos"

// cluster is one scenario's world: its database on the private cluster,
// three nodes, an agent credential (agent + publisher) of a fresh tenant,
// and a connection to all three nodes with it.
type cluster struct {
	db    *pgxpool.Pool
	nodes []*node
	token string // the agent credential
	conn  *grpc.ClientConn
}

func newCluster(t *testing.T, dbName string) *cluster {
	t.Helper()
	ctx := t.Context()
	db, err := pg.createDatabase(ctx, dbName)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	url := pg.url(dbName)

	// The first administrator, as an operator makes it: `token create
	// --admin` migrates the database and prints the token.
	cmd := exec.CommandContext(ctx, binary, "token", "create", "--admin") //nolint:gosec // our own binary
	cmd.Env = []string{"DATABASE_URL=" + url}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "token create: %s", stderr.String())
	admin := strings.TrimSpace(string(out))

	c := &cluster{db: db}
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		c.nodes = append(c.nodes, newNode(t, id, url))
	}
	for _, n := range c.nodes {
		n.waitHealthy(t, 60*time.Second)
	}
	_, err = db.Exec(ctx, auditSQL)
	require.NoError(t, err)
	// The fresh database's files are not on disk yet; a checkpoint puts them
	// there, as they would be on a server that has run for a while, so the
	// crash recovery's sync of the data folder measures the crash, not the
	// test's setup.
	_, err = db.Exec(ctx, "CHECKPOINT")
	require.NoError(t, err)

	aconn, err := worker.Dial(c.addrs(), worker.DialOptions{Token: admin, AllowInsecure: true})
	require.NoError(t, err)
	defer aconn.Close()
	ac := adminv1.NewAdminServiceClient(aconn)
	h, err := ac.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: dbName + "@example.com"}})
	require.NoError(t, err)
	a, err := ac.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: h.GetHuman().GetId(), Name: "chaos"}})
	require.NoError(t, err)
	cred, err := ac.MintCredential(ctx, &adminv1.MintCredentialRequest{
		HumanId: h.GetHuman().GetId(), AgentId: a.GetAgent().GetId(), Scopes: []string{"agent", "publisher"},
	})
	require.NoError(t, err)
	c.token = cred.GetToken()
	c.conn, err = worker.Dial(c.addrs(), worker.DialOptions{Token: c.token, AllowInsecure: true, HealthCheck: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.conn.Close() })
	return c
}

func (c *cluster) addrs() []string {
	var a []string
	for _, n := range c.nodes {
		a = append(a, n.grpc)
	}
	return a
}

// workers starts n worker processes on all three nodes.
func (c *cluster) workers(t *testing.T, n int) []*workerProc {
	t.Helper()
	ws := make([]*workerProc, n)
	for i := range ws {
		ws[i] = startWorker(t, fmt.Sprintf("w%d", i+1), queueName, c.token, c.addrs())
	}
	return ws
}

// waitDrained waits until all want todos of the queue are completed and
// none is pending or running, polling the database under deadline d.
func (c *cluster) waitDrained(t *testing.T, want int64, d time.Duration) dbCounts {
	t.Helper()
	began := time.Now()
	var last dbCounts
	for time.Since(began) < d {
		n, err := countQueue(t.Context(), c.db, queueName)
		if err == nil {
			last = n
			if n.completed >= want && n.pending+n.running == 0 {
				return n
			}
		}
		time.Sleep(250 * time.Millisecond) // polling a condition, under the deadline above
	}
	t.Fatalf("not drained within %s: %d of %d completed, %d pending, %d running, %d dead; some of them:\n%s",
		d, last.completed, want, last.pending, last.running, last.dead, notCompleted(t.Context(), c.db, queueName))
	return last
}

// producer enqueues total todos through EnqueueBatch, batch at a time, one
// batch every interval, over the cluster's round-robin connection. Every
// todo has a dedupe key, so a batch retried after an error whose first
// attempt committed stores nothing twice: the producer retries every
// failed batch until it succeeds, as an at-least-once client must.
type producer struct {
	prefix       string
	total, batch int
	interval     time.Duration
	mu           sync.Mutex
	confirmed    int64
	errs         map[codes.Code]int64
	firstErrs    []string
	done         chan struct{}
	err          error
}

func (c *cluster) produce(ctx context.Context, prefix string, total, batch int, interval time.Duration) *producer {
	p := &producer{prefix: prefix, total: total, batch: batch, interval: interval, errs: map[codes.Code]int64{}, done: make(chan struct{})}
	q := queuev1.NewQueueServiceClient(c.conn)
	go func() {
		defer close(p.done)
		start := time.Now()
		for i, b := 0, 0; i < total; i, b = i+batch, b+1 {
			if wait := time.Until(start.Add(time.Duration(b) * interval)); wait > 0 {
				time.Sleep(wait) // pacing the load, not synchronizing
			}
			req := &queuev1.EnqueueBatchRequest{Queue: queueName}
			for k := i; k < min(i+batch, total); k++ {
				req.Requests = append(req.Requests, &queuev1.EnqueueRequest{DedupeKey: fmt.Sprintf("%s-%06d", prefix, k)})
			}
			if err := p.send(ctx, q, req); err != nil {
				p.err = err
				return
			}
		}
	}()
	return p
}

func (p *producer) send(ctx context.Context, q queuev1.QueueServiceClient, req *queuev1.EnqueueBatchRequest) error {
	backoff := 50 * time.Millisecond
	for {
		call, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := q.EnqueueBatch(call, req)
		cancel()
		if err == nil {
			p.mu.Lock()
			p.confirmed += int64(len(resp.GetResponses()))
			p.mu.Unlock()
			return nil
		}
		p.mu.Lock()
		p.errs[status.Code(err)]++
		if len(p.firstErrs) < 3 {
			p.firstErrs = append(p.firstErrs, err.Error())
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("enqueue gave up: %w (last error %w)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// wait waits for the producer to finish and returns what it confirmed.
func (p *producer) wait(t *testing.T, d time.Duration) int64 {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("producer not done within %s", d)
	}
	require.NoError(t, p.err)
	return p.confirmed
}

// note summarises the enqueue errors the producer retried through.
func (p *producer) note() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) == 0 {
		return "enqueue: no errors"
	}
	s := "enqueue errors retried:"
	for c, n := range p.errs {
		s += fmt.Sprintf(" %s=%d", c, n)
	}
	return s + fmt.Sprintf(" (first: %q)", p.firstErrs)
}
