package ingest

import (
	"net/http"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// HookGetPattern is the webhook route's GET: the handshakes Meta and X send
// (hub.challenge, crc_token). A GET that is not one answers 405.
const HookGetPattern = "GET /hooks/{slug}"

// handshake answers r when it is a handshake of ep's scheme (see
// verify.Handshaker) and reports whether it did; a GET always gets its
// answer here (405 when it is not a handshake). A handshake is never
// stored: it is the provider checking the URL, not an event.
func (s *Server) handshake(w *delivery, r *http.Request, ep *hookEndpoint, req verify.Request) bool {
	hs, ok := ep.Verifier.(verify.Handshaker)
	var answer verify.Answer
	var handled bool
	var err error
	if ok { // the query is parsed only for a scheme that has handshakes
		req.Method, req.Query = r.Method, r.URL.Query()
		answer, handled, err = hs.Handshake(req)
	}
	switch {
	case err != nil:
		s.log.Info("webhook handshake not verified", zap.String("endpoint_id", ep.ID.String()), zap.Error(err))
		w.refuseUnverified(ep, err)
		hookError(w, http.StatusUnauthorized, "unauthorized")
		return true
	case !handled && r.Method == http.MethodPost:
		return false
	case !handled:
		w.refuse(ep, outcomeOther, "method not allowed: the endpoint's scheme has no handshake of this shape")
		w.Header().Set("Allow", http.MethodPost)
		hookError(w, http.StatusMethodNotAllowed, "method not allowed: this endpoint's scheme has no handshake of this shape")
		return true
	}
	w.handshake = true
	w.refuse(ep, outcomeHandshake, "") // not stored, and from a sender nobody authenticated: limited like a refusal
	w.Header().Set("Content-Type", answer.ContentType)
	// The answer may echo what the sender chose: never let a browser read it as HTML.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(answer.Status)
	_, _ = w.Write(answer.Body)
	return true
}
