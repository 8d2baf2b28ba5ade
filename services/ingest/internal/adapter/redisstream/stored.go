package redisstream

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// DefaultGroup is the consumer group of a stored config that names none:
// every node joins it, so entries spread over the cluster.
const DefaultGroup = "switchboard"

// Bounds of a stored config.
const (
	maxStoredString    = 255
	maxDB              = 15
	maxStoredDelivered = 1000
	maxStoredBatch     = 1000
)

// StoredConfig is a redis_stream adapter's config as the adapters table
// keeps it: validated by ParseStored, every default filled in, and never a
// secret (config is stored and returned verbatim).
type StoredConfig struct {
	Addr          string `json:"addr"`
	Stream        string `json:"stream"`
	Group         string `json:"group"`
	Start         string `json:"start"`
	DB            int    `json:"db"`
	Username      string `json:"username"`
	BodyField     string `json:"body_field"`
	MaxDeliveries int64  `json:"max_deliveries"`
	BatchSize     int64  `json:"batch_size"`
}

// storedKeys are a stored config's keys, in the order messages list them.
var storedKeys = []string{"addr", "stream", "group", "start", "db", "username", "body_field", "max_deliveries", "batch_size"}

// Config is the adapter's runtime configuration: id names it towards the
// sink, consumer is this node's name in the group.
func (c StoredConfig) Config(id, consumer string, log *zap.Logger) Config {
	return Config{
		ID: id, Addr: c.Addr, Username: c.Username, DB: c.DB, Stream: c.Stream, Group: c.Group,
		Consumer: consumer, StartID: c.Start, BatchSize: c.BatchSize, MaxDeliveries: c.MaxDeliveries,
		BodyField: c.BodyField, Logger: log,
	}
}

// ParseStored validates a config object (decoded JSON: numbers are float64)
// key by key and returns it with defaults filled, or every violation found,
// each named by its key, in key order. Passwords are refused: config is
// stored in clear.
func ParseStored(fields map[string]any) (StoredConfig, []apierr.FieldViolation) {
	p := &parser{fields: fields}
	unknown := make([]string, 0)
	for k := range fields {
		if !slices.Contains(storedKeys, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		if k == "password" {
			p.fail(k, "passwords are not supported yet: they would be stored in clear")
		} else {
			p.fail(k, "is not a known key; allowed: addr, stream, group, start, db, username, body_field, max_deliveries, batch_size")
		}
	}
	c := StoredConfig{Addr: p.str("addr", "", true, false)}
	if c.Addr != "" && utf8.RuneCountInString(c.Addr) <= maxStoredString {
		addr, problem := normalizeAddr(c.Addr)
		if problem != "" {
			p.fail("addr", problem)
		}
		c.Addr = addr
	}
	c.Stream = p.str("stream", "", true, false)
	if strings.HasSuffix(c.Stream, DeadLetterSuffix) {
		// A dead-letter stream holds the entries of the adapters of the
		// stream it is named after: reading it would bypass their claim.
		p.fail("stream", `must not end in "`+DeadLetterSuffix+`": that suffix names dead-letter streams`)
	}
	c.Group = p.str("group", DefaultGroup, false, false)
	c.Start = p.str("start", "$", false, false)
	if _, isString := fields["start"].(string); isString && c.Start != "" && c.Start != "$" && c.Start != "0" {
		p.fail("start", `must be "$" (new entries only) or "0" (the whole stream)`)
	}
	c.DB = p.integer("db", 0, 0, maxDB)
	c.Username = p.str("username", "", false, true)
	c.BodyField = p.str("body_field", DefaultBodyField, false, false)
	c.MaxDeliveries = int64(p.integer("max_deliveries", DefaultMaxDeliveries, 1, maxStoredDelivered))
	c.BatchSize = int64(p.integer("batch_size", DefaultBatchSize, 1, maxStoredBatch))
	return c, p.violations
}

// normalizeAddr returns addr as it is stored and compared: a DNS name in
// lower case without its trailing dot, an IP address in canonical form (an
// IPv4-mapped IPv6 address as IPv4), the port in decimal; or why addr is
// not acceptable.
func normalizeAddr(addr string) (string, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return addr, `must be "host:port"`
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return addr, "must have a port between 1 and 65535"
	}
	port = strconv.FormatUint(n, 10)
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return addr, "must not name an IPv6 zone"
		}
		return net.JoinHostPort(ip.Unmap().String(), port), ""
	}
	name := adapter.NormalizeName(host)
	if !textcheck.DNSName(name) {
		return addr, "must be host:port with an IP address or a DNS name as host"
	}
	return net.JoinHostPort(name, port), ""
}

// SourceKey names the stream c reads as its addr is written (normalized):
// the server, the database number and the stream. Adapters with one key
// read the same entries, so they must belong to one owner.
//
// Two spellings of one server are two keys here ("localhost" and
// "127.0.0.1"); AddrKey and ServerKey compare what they reach.
func (c StoredConfig) SourceKey() string {
	addr, problem := normalizeAddr(c.Addr)
	if problem != "" {
		addr = strings.ToLower(c.Addr)
	}
	return addr + "/" + c.stream()
}

// AddrKey names the stream c reads at one address its addr reaches: the
// address as adapter.SourceAddr spells it (every loopback address alike),
// the database number and the stream. Two adapters whose addrs reach one
// address read one server's stream, however each addr is written.
func (c StoredConfig) AddrKey(ap netip.AddrPort) string {
	return adapter.SourceAddr(ap) + "/" + c.stream()
}

// AddrKeys are the AddrKeys of every address in reach, without repeats.
func (c StoredConfig) AddrKeys(reach []netip.AddrPort) []string {
	keys := make([]string, 0, len(reach))
	for _, ap := range reach {
		if k := c.AddrKey(ap); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// ServerKey names the stream c reads on the server whose INFO run_id is
// runID: the server as it names itself, whatever address reached it (a
// LAN address of a server also bound to loopback, a proxy in front of it).
func (c StoredConfig) ServerKey(runID string) string { return runID + "/" + c.stream() }

// stream is the part of every key after the server: "<db>/<stream>".
func (c StoredConfig) stream() string { return strconv.Itoa(c.DB) + "/" + c.Stream }

// parser collects the violations of one config.
type parser struct {
	fields     map[string]any
	violations []apierr.FieldViolation
}

func (p *parser) fail(key, description string) {
	p.violations = append(p.violations, apierr.FieldViolation{Field: key, Description: description})
}

// str returns the string at key (def when absent), 1–255 characters unless
// allowEmpty, at most 255 either way.
func (p *parser) str(key, def string, required, allowEmpty bool) string {
	v, ok := p.fields[key]
	if !ok {
		if required {
			p.fail(key, "is required")
		}
		return def
	}
	s, ok := v.(string)
	if !ok {
		p.fail(key, "must be a string")
		return def
	}
	switch n := utf8.RuneCountInString(s); {
	case !utf8.ValidString(s):
		p.fail(key, "must be valid UTF-8")
	case n == 0 && !allowEmpty:
		p.fail(key, "must not be empty")
	case n > maxStoredString:
		p.fail(key, "must be at most 255 characters")
	}
	return s
}

// integer returns the whole number at key (def when absent) within lo–hi.
func (p *parser) integer(key string, def, lo, hi int) int {
	v, ok := p.fields[key]
	if !ok {
		return def
	}
	n, ok := v.(float64)
	if !ok || math.IsNaN(n) || math.IsInf(n, 0) || n != math.Trunc(n) {
		p.fail(key, "must be an integer")
		return def
	}
	if n < float64(lo) || n > float64(hi) {
		p.fail(key, fmt.Sprintf("must be between %d and %d", lo, hi))
		return def
	}
	return int(n)
}
