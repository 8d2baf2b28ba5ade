package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/pkg/tracing"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/ingest/verify"
)

// HookPattern is the webhook route on the HTTP edge.
const HookPattern = "POST /hooks/{slug}"

// hookReadTimeout bounds reading one webhook body, so a slow sender cannot
// hold a connection (the server has no global ReadTimeout: streaming routes
// share it).
const hookReadTimeout = 30 * time.Second

// storeTimeout bounds the transaction after the body is in.
const storeTimeout = 10 * time.Second

var slugPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// droppedHeaders are never stored with an event: credentials, and the
// hop-by-hop headers that describe the connection, not the event.
var droppedHeaders = map[string]bool{
	"authorization": true, "cookie": true, "proxy-authorization": true, "connection": true, "keep-alive": true,
	"proxy-connection": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
}

// HookHandler serves POST /hooks/{slug}: limits, verification, then the
// event and its todo in one transaction, and 2xx only after the commit. It
// also serves GET /hooks/{slug} (HookGetPattern) and answers providers'
// handshakes, GET or POST, without storing them (handshake.go).
// Answers: 200 stored or duplicate; 404 unknown or disabled endpoint; 413
// body over the endpoint's cap; 401 not verified (no detail); 400 a header
// that cannot be stored (a NUL or invalid UTF-8: textcheck), named; 429 with
// Retry-After over the endpoint's or tenant's rate; 503 when the database
// cannot take it (the sender retries).
func (s *Server) HookHandler() http.Handler {
	m := s.opts.Metrics.IngestSeries()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := &delivery{ResponseWriter: w, scheme: "unknown", received: time.Now()}
		s.serveHook(d, r)
		m.Delivery(d.scheme, d.outcome())
		s.logDelivery(d)
	})
}

// delivery is the answer to one webhook as the metrics see it: the
// endpoint's scheme once known, the status, and whether it was a duplicate.
type delivery struct {
	http.ResponseWriter
	scheme    string
	status    int
	duplicate bool
	handshake bool
	// What the endpoint's delivery log records (hooks_log.go): nothing
	// while ep is nil (an unknown path, or no endpoint could be read).
	received time.Time
	ep       *hookEndpoint
	entry    logEntry
}

func (d *delivery) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
	d.ResponseWriter.WriteHeader(code)
}

// outcome is accepted, duplicate, or the status code of a refusal.
func (d *delivery) outcome() string {
	switch {
	case d.duplicate:
		return metrics.OutcomeDuplicate
	case d.handshake && d.status == http.StatusOK:
		return metrics.OutcomeHandshake
	case d.status == 0 || d.status == http.StatusOK:
		return metrics.OutcomeAccepted
	}
	return strconv.Itoa(d.status)
}

func (s *Server) serveHook(w *delivery, r *http.Request) {
	slug := r.PathValue("slug")
	if !slugPattern.MatchString(slug) {
		hookError(w, http.StatusNotFound, "not found")
		return
	}
	ep, err := s.endpoints.get(r.Context(), slug)
	switch {
	case errors.Is(err, errNoEndpoint):
		hookError(w, http.StatusNotFound, "not found")
		return
	case errors.Is(err, errAwaitingSecret) && ep.Enabled:
		s.log.Info("webhook refused: its endpoint has no secret yet (AddEndpointSecret)", zap.String("endpoint_id", ep.ID.String()))
		w.refuse(ep, outcomeOther, "the endpoint has no secret yet (AddEndpointSecret)")
		hookError(w, http.StatusUnauthorized, "unauthorized")
		return
	case errors.Is(err, errAwaitingSecret):
		w.refuse(ep, outcomeDisabled, "the endpoint is disabled")
		hookError(w, http.StatusNotFound, "not found")
		return
	case errors.Is(err, errMisconfigured):
		s.log.Error("endpoint cannot verify; refusing its requests", zap.String("endpoint_id", ep.ID.String()), zap.Error(err))
		w.refuse(ep, outcomeOther, "the endpoint cannot verify: its stored configuration is broken (see the node's log)")
		hookError(w, http.StatusUnauthorized, "unauthorized")
		return
	case err != nil:
		s.log.Warn("webhook: endpoint lookup failed", zap.Error(err))
		unavailable(w)
		return
	case !ep.Enabled:
		w.refuse(ep, outcomeDisabled, "the endpoint is disabled")
		hookError(w, http.StatusNotFound, "not found")
		return
	}
	w.scheme = string(ep.Verify.Scheme)
	now := time.Now()
	if ok, wait := s.limits.Allow(ep.ID, ep.RatePerSecond, now); !ok {
		w.refuse(ep, outcomeRateLimited, "over the endpoint's rate limit")
		tooMany(w, wait)
		return
	}
	if ok, wait := s.limits.Allow(ep.HumanID, ep.TenantRatePerSecond, now); !ok {
		w.refuse(ep, outcomeRateLimited, "over the tenant's rate limit")
		tooMany(w, wait)
		return
	}
	if r.Method != http.MethodPost {
		s.handshake(w, r, ep, verify.Request{Header: r.Header, Now: now})
		return
	}
	body, status := readBody(w.ResponseWriter, r, ep.MaxBodyBytes) // unwrapped, for MaxBytesReader (see metrics.HTTP)
	if status != 0 {
		w.refuseBody(ep, status, r.ContentLength)
		hookError(w, status, http.StatusText(status))
		return
	}
	w.entry.size = int64(len(body))
	if s.handshake(w, r, ep, verify.Request{Body: body, Header: r.Header, Now: now}) {
		return
	}
	res, err := ep.Verifier.Verify(verify.Request{Body: body, Header: r.Header, Now: now, URL: signedURL(r, ep)})
	if err != nil {
		s.log.Info("webhook not verified", zap.String("endpoint_id", ep.ID.String()), zap.Error(err))
		w.refuseUnverified(ep, err)
		hookError(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), storeTimeout)
	defer cancel()
	ev := s.hookEvent(r, ep, res, body)
	if what, err := unstorableText(ev); err != nil {
		// Not the database's fault: a retry would fail the same way.
		s.log.Info("webhook refused: text that cannot be stored", zap.String("endpoint_id", ep.ID.String()), zap.String("in", what))
		w.verified(ep, outcomeOther, ev, store.Stored{}, what+" "+err.Error())
		hookError(w, http.StatusBadRequest, what+" "+err.Error())
		return
	}
	var stored store.Stored
	var note string // the delivery log's detail for an accepted delivery
	if ep.routes != nil {
		ev, stored, note, err = s.ingestRouted(ctx, ep, ev)
	} else {
		stored, err = s.batcher.ingest(ctx, ev, store.Target{Queue: ep.Queue, AgentID: ep.AgentID, Kind: routeKind, KindFromTopic: true})
	}
	if err != nil {
		s.log.Warn("webhook: store failed; answering 503", zap.String("endpoint_id", ep.ID.String()), zap.Error(err))
		w.verified(ep, outcomeUnavailable, ev, store.Stored{}, "the database could not store it; the sender retries")
		unavailable(w)
		return
	}
	s.received(ev, stored)
	w.verified(ep, outcomeAccepted, ev, stored, note)
	w.Header().Set("Content-Type", "application/json")
	if stored.Duplicate {
		w.duplicate = true
		_, _ = io.WriteString(w, `{"status":"duplicate"}`+"\n")
		return
	}
	_, _ = io.WriteString(w, `{"status":"accepted","event_id":"`+strconv.FormatInt(stored.EventID, 10)+`"}`+"\n")
}

// hookEvent is the event to store for a verified request: its topic and
// dedup keys come from eventFacts.
func (s *Server) hookEvent(r *http.Request, ep *hookEndpoint, res verify.Result, body []byte) store.Event {
	res = verify.Describe(ep.Verify.Scheme, ep.Topic, verify.Request{Body: body, Header: r.Header}, res)
	e := store.Event{
		HumanID: ep.HumanID, Source: "endpoint:" + ep.ID.String(), EndpointID: &ep.ID, AgentID: ep.AgentID,
		DeliveryID: res.DeliveryID, ContentType: r.Header.Get("Content-Type"), Payload: body,
		VerifiedScheme: string(res.Scheme), Headers: map[string]string{}, TraceParent: tracing.TraceParent(r.Context()),
	}
	s.eventFacts(&e, r, ep, res)
	for k, v := range r.Header {
		if k = strings.ToLower(k); !droppedHeaders[k] && len(v) > 0 {
			e.Headers[k] = strings.Join(v, ", ")
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil {
			ip = ip.Unmap()
			e.SourceIP = &ip
		}
	}
	return e
}

// unstorableText names the first text of e that textcheck refuses (a NUL,
// invalid UTF-8) and why: every header stored with the event, its
// Content-Type and delivery id. PostgreSQL would refuse it in the text and
// jsonb columns, and the sender would get a 503 and retry forever. Go's
// HTTP server already answers 400 for control characters in a header, but
// passes bytes 0x80–0xFF, so a non-UTF-8 value does reach here.
func unstorableText(e store.Event) (string, error) {
	if err := textcheck.Check(e.ContentType); err != nil {
		return "header Content-Type", err
	}
	if err := textcheck.Check(e.DeliveryID); err != nil {
		return "delivery id", err
	}
	for k, v := range e.Headers {
		if err := textcheck.Check(k); err != nil {
			return "header name " + strconv.QuoteToASCII(cut(k, 64)), err
		}
		if err := textcheck.Check(v); err != nil {
			return "header " + k, err
		}
	}
	return "", nil
}

// cut shortens s to at most n bytes without splitting a UTF-8 sequence
// (a split one is invalid UTF-8, which the text columns refuse).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// readBody reads at most limit bytes within hookReadTimeout; status is 413
// past the limit, 408 when the sender is too slow, 400 on a broken body.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(hookReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge
	case isTimeout(err):
		return nil, http.StatusRequestTimeout
	case err != nil:
		return nil, http.StatusBadRequest
	}
	return body, 0
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func hookError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// Encoded, not spliced: a message may name a header the sender chose.
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	_, _ = w.Write(append(b, '\n'))
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	hookError(w, http.StatusServiceUnavailable, "unavailable, retry later")
}

func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait, time.Second).Seconds()))))
	hookError(w, http.StatusTooManyRequests, "too many requests")
}
