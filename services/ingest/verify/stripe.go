package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// stripeVerifier checks the Stripe-Signature header. The event id lives inside
// the signed body, so no delivery id is reported here: Describe reads it (and
// the type) once the body verified.
type stripeVerifier struct {
	secrets   [][]byte
	tolerance time.Duration
}

// stripeHeader is a parsed Stripe-Signature value.
type stripeHeader struct {
	rawTS string
	v1    [][]byte
}

// parseStripeSignature follows stripe-go: every item must be key=value, exactly
// one t is required, and v1 values that do not decode are ignored (a future
// format must not break verification of the ones we can read). v0 and
// unknown keys are ignored: v0 is a test-mode scheme we never trust.
func parseStripeSignature(header string) (stripeHeader, error) {
	var h stripeHeader
	items := 0
	for item := range strings.SplitSeq(header, ",") {
		items++
		if items > 2*maxSignatures {
			return stripeHeader{}, unverified("stripe: too many signature items")
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return stripeHeader{}, unverified("stripe: malformed signature header")
		}
		switch key {
		case "t":
			if h.rawTS != "" {
				return stripeHeader{}, unverified("stripe: repeated timestamp")
			}
			if value == "" {
				return stripeHeader{}, unverified("stripe: empty timestamp")
			}
			h.rawTS = value
		case "v1":
			sig, err := hex.DecodeString(value)
			if err != nil || len(sig) != sha256.Size {
				continue
			}
			h.v1 = append(h.v1, sig)
		}
	}
	if h.rawTS == "" {
		return stripeHeader{}, unverified("stripe: missing timestamp")
	}
	if len(h.v1) == 0 {
		return stripeHeader{}, unverified("stripe: no v1 signature")
	}
	return h, nil
}

func (v stripeVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "Stripe-Signature")
	if err != nil {
		return Result{}, err
	}
	h, err := parseStripeSignature(header)
	if err != nil {
		return Result{}, err
	}
	ts, err := signedTimestamp(h.rawTS, r.Now, v.tolerance)
	if err != nil {
		return Result{}, err
	}
	prefix := []byte(h.rawTS + ".")
	matched := false
	for _, sig := range h.v1 {
		if anySHA256Matches(v.secrets, sig, prefix, r.Body) {
			matched = true
		}
	}
	if !matched {
		return Result{}, unverified("stripe: no matching v1 signature")
	}
	return Result{Scheme: SchemeStripe, Timestamp: ts}, nil
}
