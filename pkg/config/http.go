package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The HTTP edge's limits.
const (
	// EnvHTTPMaxBody caps a REST request body (bytes; KiB and MiB suffixes
	// allowed). A larger one is answered 413 before the node reads past the
	// cap. Webhooks have their own per-endpoint cap.
	EnvHTTPMaxBody = "SWITCHBOARD_HTTP_MAX_BODY"
	// EnvHTTPReadTimeout bounds receiving one request body, on every HTTP
	// route; a slower sender is answered 408 and its connection closed.
	EnvHTTPReadTimeout = "SWITCHBOARD_HTTP_READ_TIMEOUT"
	// EnvHTTPMaxConns caps the HTTP connections a node holds open; more wait
	// in the listen backlog until one closes.
	EnvHTTPMaxConns = "SWITCHBOARD_HTTP_MAX_CONNS"
)

// DefaultHTTPMaxBody is the largest request the gRPC server accepts
// (grpcserver.MaxRecvMsgSize; a test keeps the two equal): a bigger body
// could not be passed on anyway.
const DefaultHTTPMaxBody = 4 << 20

// Bounds on the limits themselves: a cap too small for an ordinary request,
// or so large that one request holds a large share of a node's memory, is a
// mistake rather than a choice.
const (
	minHTTPMaxBody = 1 << 10
	maxHTTPMaxBody = 64 << 20
)

// HTTPLimits bound what one client can hold on the HTTP edge.
type HTTPLimits struct {
	MaxBody     int64
	ReadTimeout time.Duration
	MaxConns    int
}

func defaultHTTPLimits() HTTPLimits {
	return HTTPLimits{MaxBody: DefaultHTTPMaxBody, ReadTimeout: 30 * time.Second, MaxConns: 4096}
}

func (p *parser) httpLimits(dst *HTTPLimits) {
	p.size(EnvHTTPMaxBody, &dst.MaxBody)
	p.duration(EnvHTTPReadTimeout, &dst.ReadTimeout)
	if v, ok := p.get(EnvHTTPMaxConns); ok && p.err == nil {
		n, err := strconv.Atoi(v)
		if err != nil {
			p.err = fmt.Errorf("%s: %q is not a whole number", EnvHTTPMaxConns, v)
			return
		}
		dst.MaxConns = n
	}
}

// size parses a byte count: "4194304", "512KiB", "4MiB".
func (p *parser) size(name string, dst *int64) {
	v, ok := p.get(name)
	if !ok || p.err != nil {
		return
	}
	digits, unit := v, int64(1)
	for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20} {
		if d, found := strings.CutSuffix(v, suffix); found {
			digits, unit = strings.TrimSpace(d), u
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/unit {
		p.err = fmt.Errorf("%s: %q is not a size in bytes (examples: 1048576, 512KiB, 4MiB)", name, v)
		return
	}
	*dst = n * unit
}

func (h HTTPLimits) validate() error {
	switch {
	case h.MaxBody < minHTTPMaxBody || h.MaxBody > maxHTTPMaxBody:
		return fmt.Errorf("%s: must be from 1KiB to 64MiB, got %d bytes", EnvHTTPMaxBody, h.MaxBody)
	case h.MaxConns < 1:
		return fmt.Errorf("%s: must be at least 1, got %d", EnvHTTPMaxConns, h.MaxConns)
	}
	return positive(EnvHTTPReadTimeout, h.ReadTimeout)
}
