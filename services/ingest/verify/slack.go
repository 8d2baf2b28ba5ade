package verify

import "time"

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
	sig, err := hexSHA256("slack", header, "v0=", "unsupported signature version")
	if err != nil {
		return Result{}, err
	}
	if err := sha256Matches("slack", v.secrets, sig, []byte("v0:"+rawTS+":"), r.Body); err != nil {
		return Result{}, err
	}
	return Result{Scheme: SchemeSlack, Timestamp: ts}, nil
}
