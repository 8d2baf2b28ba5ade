package node

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/mcp"
	"github.com/switchboard/switchboard/services/queue"
	"github.com/switchboard/switchboard/services/realtime"
)

// mountMCP serves the MCP server at /mcp beside the gateway: a client of
// the same upstreams (one connection per service, where routing.go sends
// the gateway's), checked by the same authenticator before a body is read,
// capped at the same body size, and each tenant's requests in progress and
// waits capped as configured (SWITCHBOARD_MCP_MAX_*_PER_TENANT). The connections close with the
// gateway's, once the HTTP server has stopped.
func (a *assembly) mountMCP(upstreams map[string]gateway.Upstream) error {
	dial := func(service string) (*grpc.ClientConn, error) {
		u := upstreams[service]
		opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, u.Dial...)
		conn, err := grpc.NewClient(u.Target, append(opts, a.tracing.DialOptions()...)...)
		if err != nil {
			return nil, fmt.Errorf("dial mcp upstream %s for %s: %w", u.Target, service, err)
		}
		a.closers = append(a.closers, conn.Close)
		a.httpClosed = append(a.httpClosed, conn.Close)
		return conn, nil
	}
	var c mcp.Conns
	for _, d := range []struct {
		service string
		conn    *grpc.ClientConnInterface
	}{{queue.Name, &c.Queue}, {ingest.Name, &c.Ingest}, {realtime.Name, &c.Realtime}} {
		conn, err := dial(d.service)
		if err != nil {
			return err
		}
		*d.conn = conn
	}
	s := mcp.New(c, mcp.Options{Version: buildinfo.Get().Version, MaxWaitsPerTenant: a.cfg.MCP.MaxWaitsPerTenant})
	a.mux.Handle(mcp.Path, mcp.Handler(s, mcp.HTTPOptions{
		Identify: a.identify, MaxBodyBytes: a.cfg.HTTPLimits.MaxBody, MaxCallsPerTenant: a.cfg.MCP.MaxCallsPerTenant,
	}))
	return nil
}

// identify is the MCP edge's check of who is calling: the authenticator's
// Identify, its errors as the gRPC statuses the edge renders (as
// authenticate for the REST edge).
func (a *assembly) identify(ctx context.Context, authorization []string) (auth.Principal, error) {
	p, err := a.authn.Identify(ctx, authorization)
	if err != nil {
		st, _ := apierr.ToStatus(err)
		return auth.Principal{}, st.Err()
	}
	return p, nil
}
