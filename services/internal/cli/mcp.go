package cli

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/buildinfo"
	"github.com/switchboard/switchboard/pkg/tlsconfig"
	"github.com/switchboard/switchboard/services/mcp"
)

// envMCPToken is the MCP server's bearer credential. An environment
// variable, never a flag: a flag would show in ps.
const envMCPToken = "SWITCHBOARD_TOKEN"

const mcpAbout = `Serves Switchboard's MCP tools and resources over stdin/stdout to one MCP client (an agent
started by Claude Desktop, Cursor, …), as a client of a node's gRPC API at --addr. SWITCHBOARD_TOKEN
is the bearer credential every call carries: the services decide what it may read and do (an agent
credential for the work tools). Logs nothing to stdout, which is the protocol's.`

// mcpCmd runs `switchboard mcp` over in and out.
func mcpCmd(ctx context.Context, args []string, in io.ReadCloser, out io.WriteCloser, lookup func(string) (string, bool)) error {
	c := newCommand("mcp", "switchboard mcp [--addr 127.0.0.1:9090] [--cacert ca.pem | --tls]", mcpAbout)
	addr := c.fs.String("addr", "127.0.0.1:9090", "the node's gRPC address")
	caFile := c.fs.String("cacert", "", "PEM CA bundle to verify the node's TLS certificate (turns TLS on)")
	useTLS := c.fs.Bool("tls", false, "connect with TLS, verified against the system roots (or --cacert)")
	pos, help, err := c.parse(args, out)
	if help || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("mcp takes no arguments")
	}
	token, ok := lookup(envMCPToken)
	if !ok || token == "" {
		return usageErr("mcp: set %s to a bearer credential", envMCPToken)
	}
	creds := insecure.NewCredentials()
	if *useTLS || *caFile != "" {
		t := tlsconfig.Client(nil, nil, "")
		if *caFile != "" {
			if t.RootCAs, err = tlsconfig.ReadCAs(*caFile); err != nil {
				return usageErr("mcp: --cacert: %v", err)
			}
		}
		creds = credentials.NewTLS(t)
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(auth.Bearer{Token: token, AllowInsecure: *caFile == "" && !*useTLS}))
	if err != nil {
		return fmt.Errorf("mcp: dial %s: %w", *addr, err)
	}
	defer func() { _ = conn.Close() }()
	s := mcp.New(mcp.Conns{Queue: conn, Ingest: conn, Realtime: conn}, mcp.Options{Version: buildinfo.Get().Version})
	return mcp.ServeStdio(ctx, s, in, out)
}
