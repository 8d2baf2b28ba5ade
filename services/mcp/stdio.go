package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioMessageBytes bounds one message read over stdio, as
// SWITCHBOARD_HTTP_MAX_BODY's default bounds one over HTTP: no request
// that could reach the API (gRPC takes 4 MiB) is larger.
const MaxStdioMessageBytes = 4 << 20

// ServeStdio serves s to one client over in and out (a process's stdin and
// stdout: `switchboard mcp`) until the client disconnects or ctx ends.
func ServeStdio(ctx context.Context, s *mcp.Server, in io.ReadCloser, out io.WriteCloser) error {
	err := s.Run(ctx, &stdioTransport{in: in, out: out})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("mcp over stdio: %w", err)
}

// stdioTransport is the SDK's IOTransport (newline-delimited JSON-RPC) but
// for what it lets through: the SDK runs a batch that arrives before the
// handshake and ends the session on one after it, where this answers every
// batch with Invalid Request, runs none of it, and reads on
// (MinProtocolVersion says why), as it answers a message too costly to
// decode (request.go), as /mcp does. It also bounds one message at
// MaxStdioMessageBytes (the SDK's bound is 16 MiB).
type stdioTransport struct {
	in  io.ReadCloser
	out io.WriteCloser
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{in: t.in, out: t.out, incoming: make(chan readResult), closed: make(chan struct{})}
	// Reads happen on their own goroutine so that Close unblocks a Read
	// (the Connection contract); a read of stdin that never returns keeps
	// it until the process ends, as the SDK's does.
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type stdioConn struct {
	in       io.ReadCloser
	out      io.WriteCloser
	incoming chan readResult
	writeMu  sync.Mutex // one message written at a time, whole

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// readLoop decodes one JSON value after another and hands each message to
// Read; it answers a batch, or a value that is no JSON-RPC message, itself
// and reads on (JSON-RPC's Invalid Request). Input that is not JSON, or a
// message too large, ends the session after an answer saying so: the
// stream cannot be taken up again after it.
func (c *stdioConn) readLoop() {
	frame := &frameReader{r: c.in}
	dec := json.NewDecoder(frame)
	for {
		frame.n = 0
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			c.fail(err)
			return
		}
		var reply []byte
		switch msg, err := decodeLine(raw); {
		case err != nil:
			reply = errorResponse(err.Code, err.Message)
		case !c.deliver(readResult{msg: msg}):
			return
		default:
			continue
		}
		if err := c.writeLine(reply); err != nil {
			c.deliver(readResult{err: err})
			return
		}
	}
}

// decodeLine is a message, or why no tool may run it: a batch, a value too
// costly to decode (request.go), or one that is no JSON-RPC message.
func decodeLine(raw json.RawMessage) (jsonrpc.Message, *jsonrpc.Error) {
	if isBatch(raw[0]) { // a decoded value starts with its first significant byte
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: batchMessage}
	}
	if err := checkCost(raw); err != nil {
		return nil, err
	}
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not a JSON-RPC 2.0 request, notification or response"}
	}
	return msg, nil
}

// fail ends reading on err, answering what the client sent wrong first.
func (c *stdioConn) fail(err error) {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, errFrameTooLarge):
		err = fmt.Errorf("a message is larger than %d bytes", MaxStdioMessageBytes)
		_ = c.writeLine(errorResponse(jsonrpc.CodeInvalidRequest, err.Error()))
	case errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("input that is not JSON: %w", err)
		_ = c.writeLine(errorResponse(jsonrpc.CodeParseError, "the input is not JSON; send one JSON-RPC message per line"))
	}
	c.deliver(readResult{err: err})
}

// deliver hands r to Read, reporting false once the connection is closed.
func (c *stdioConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode a message: %w", err)
	}
	return c.writeLine(b)
}

// writeLine writes b and a newline in one Write, so messages never
// interleave.
func (c *stdioConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b[:len(b):len(b)], '\n'))
	return err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.in.Close(), c.out.Close())
		close(c.closed)
	})
	return c.closeErr
}

func (c *stdioConn) SessionID() string { return "" }

var errFrameTooLarge = errors.New("frame too large")

// frameReader fails once more than MaxStdioMessageBytes are read for one
// message (n is reset before each): the decoder would otherwise buffer a
// line without end. It counts what the decoder reads ahead too, so a
// message just under the bound that shares a read with the next may be
// refused; clients send one message at a time.
type frameReader struct {
	r io.Reader
	n int
}

func (f *frameReader) Read(p []byte) (int, error) {
	if f.n >= MaxStdioMessageBytes {
		return 0, errFrameTooLarge
	}
	if len(p) > MaxStdioMessageBytes-f.n {
		p = p[:MaxStdioMessageBytes-f.n]
	}
	n, err := f.r.Read(p)
	f.n += n
	return n, err
}
