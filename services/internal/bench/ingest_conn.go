package bench

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// hookConn is one keep-alive HTTP/1.1 connection that sends signed Standard
// Webhooks deliveries, one at a time. The load generator is on the same
// machine as the server and its database, so every microsecond it spends is
// one the system under test does not get: it builds each request in a
// reused buffer and reads the answer with net/http's parser, instead of
// going through http.Client's per-connection goroutines. (pgbench, the
// anchor the result is compared with, is a lean C client too.)
type hookConn struct {
	addr, host, path string
	tls              *tls.Config // nil: plain HTTP
	conn             net.Conn
	r                *bufio.Reader
	mac              hash.Hash
	buf, sig         []byte
}

// newHookConn prepares a connection to rawURL; tlsConf (an https:// URL's,
// cloned per connection) is nil for http://.
func newHookConn(rawURL string, key []byte, tlsConf *tls.Config) (*hookConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bench ingest: %q is not an http(s) URL", rawURL)
	}
	c := &hookConn{addr: u.Host, host: u.Host, path: u.RequestURI(), mac: hmac.New(sha256.New, key)}
	if u.Scheme == "https" {
		c.tls = tlsConf.Clone()
		if c.tls == nil {
			c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	if u.Port() == "" {
		c.addr = net.JoinHostPort(u.Hostname(), map[bool]string{false: "80", true: "443"}[c.tls != nil])
	}
	return c, nil
}

// deliver sends one delivery and wants 200. On an error the connection is
// dropped; the next call dials again.
func (c *hookConn) deliver(ctx context.Context, id string, body []byte) error {
	if c.conn == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		var conn net.Conn
		var err error
		if c.tls != nil {
			conn, err = (&tls.Dialer{NetDialer: d, Config: c.tls}).DialContext(ctx, "tcp", c.addr)
		} else {
			conn, err = d.DialContext(ctx, "tcp", c.addr)
		}
		if err != nil {
			return err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 4096)
	}
	keep, err := c.roundTrip(id, body)
	if err != nil || !keep {
		c.close()
	}
	return err
}

// roundTrip sends the delivery on c.conn; keep is false when the server
// closes the connection after its answer.
func (c *hookConn) roundTrip(id string, body []byte) (keep bool, err error) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	c.mac.Reset()
	for _, part := range [][]byte{[]byte(id), {'.'}, []byte(ts), {'.'}, body} {
		c.mac.Write(part)
	}
	c.sig = c.mac.Sum(c.sig[:0])
	b := c.buf[:0]
	b = append(b, "POST "...)
	b = append(b, c.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nWebhook-Id: "...)
	b = append(b, id...)
	b = append(b, "\r\nWebhook-Timestamp: "...)
	b = append(b, ts...)
	b = append(b, "\r\nWebhook-Signature: v1,"...)
	b = base64.StdEncoding.AppendEncode(b, c.sig)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.buf = b
	if err := c.conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return false, err
	}
	if _, err := c.conn.Write(b); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	switch {
	case err != nil:
		return false, err
	case resp.StatusCode != http.StatusOK:
		return !resp.Close, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return !resp.Close, nil
}

func (c *hookConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}
