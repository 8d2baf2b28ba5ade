package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// githubVerifier checks X-Hub-Signature-256. The legacy SHA-1 X-Hub-Signature
// header is deliberately ignored.
type githubVerifier struct{ secrets [][]byte }

func (v githubVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "X-Hub-Signature-256")
	if err != nil {
		return Result{}, err
	}
	encoded, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return Result{}, unverified("github: signature lacks sha256= prefix")
	}
	sig, err := hex.DecodeString(encoded)
	if err != nil || len(sig) != sha256.Size {
		return Result{}, unverified("github: malformed signature")
	}
	if !anySHA256Matches(v.secrets, sig, r.Body) {
		return Result{}, unverified("github: signature mismatch")
	}
	return Result{Scheme: SchemeGitHub, DeliveryID: r.Header.Get("X-GitHub-Delivery")}, nil
}
