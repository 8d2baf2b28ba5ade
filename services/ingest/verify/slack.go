package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// slackVerifier checks Slack's v0 request signing.
type slackVerifier struct {
	secrets   [][]byte
	tolerance time.Duration
}

func (v slackVerifier) Verify(r Request) (Result, error) {
	rawTS, err := singleHeader(r.Header, "X-Slack-Request-Timestamp")
	if err != nil {
		return Result{}, err
	}
	header, err := singleHeader(r.Header, "X-Slack-Signature")
	if err != nil {
		return Result{}, err
	}
	ts, err := signedTimestamp(rawTS, r.Now, v.tolerance)
	if err != nil {
		return Result{}, err
	}
	encoded, ok := strings.CutPrefix(header, "v0=")
	if !ok {
		return Result{}, unverified("slack: unsupported signature version")
	}
	sig, err := hex.DecodeString(encoded)
	if err != nil || len(sig) != sha256.Size {
		return Result{}, unverified("slack: malformed signature")
	}
	if !anySHA256Matches(v.secrets, sig, []byte("v0:"+rawTS+":"), r.Body) {
		return Result{}, unverified("slack: signature mismatch")
	}
	return Result{Scheme: SchemeSlack, Timestamp: ts}, nil
}
