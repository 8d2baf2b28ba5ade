package verify

import (
	"crypto/sha1" //nolint:gosec // Twilio signs with HMAC-SHA1; HMAC does not rest on SHA-1's collision resistance.
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"mime"
	"net/url"
	"sort"
	"strings"
)

// Twilio's request headers.
const (
	twilioSignatureHeader   = "X-Twilio-Signature"
	twilioIdempotencyHeader = "I-Twilio-Idempotency-Token"
	twilioBodyHashParam     = "bodySHA256"
	formMediaType           = "application/x-www-form-urlencoded"
)

// twilioVerifier checks X-Twilio-Signature: the base64 HMAC-SHA1, keyed by
// the account's auth token, of the URL Twilio requested followed, for a
// form POST, by every parameter's name and value sorted by name. For any
// other body Twilio puts the body's hex SHA-256 in the URL as bodySHA256
// and signs the URL alone. Twilio signs no timestamp: replays are caught by
// dedup (its idempotency token is not signed, so the body hash counts too).
type twilioVerifier struct{ secrets [][]byte }

func (v twilioVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, twilioSignatureHeader)
	if err != nil {
		return Result{}, err
	}
	sig, err := strictBase64.DecodeString(header)
	if err != nil || len(sig) != sha1.Size {
		return Result{}, unverified("twilio: malformed signature")
	}
	urls, err := twilioURLs(r.URL)
	if err != nil {
		return Result{}, err
	}
	params, err := twilioSignedParams(r)
	if err != nil {
		return Result{}, err
	}
	matched := false
	for _, u := range urls {
		if anyMACMatches(sha1.New, v.secrets, sig, []byte(u), params) {
			matched = true
		}
	}
	if !matched {
		return Result{}, unverified("twilio: signature mismatch")
	}
	return Result{Scheme: SchemeTwilio, DeliveryID: r.Header.Get(twilioIdempotencyHeader)}, nil
}

// twilioSignedParams is what follows the URL in the signed string: nothing
// when the URL carries bodySHA256 (checked here against the body), else the
// form parameters as name+value pairs sorted by name, then value. A body
// the signature would not cover (neither hashed nor a form) is refused.
func twilioSignedParams(r Request) ([]byte, error) {
	hashes, err := queryValues(r.URL, twilioBodyHashParam)
	if err != nil {
		return nil, err
	}
	switch {
	case len(hashes) > 1:
		return nil, unverified("twilio: repeated " + twilioBodyHashParam)
	case len(hashes) == 1:
		want, err := hex.DecodeString(hashes[0])
		got := sha256.Sum256(r.Body)
		if err != nil || subtle.ConstantTimeCompare(want, got[:]) != 1 {
			return nil, unverified("twilio: body does not match " + twilioBodyHashParam)
		}
		return nil, nil
	case len(r.Body) == 0:
		return nil, nil
	}
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || media != formMediaType {
		return nil, unverified("twilio: body is neither a form nor covered by " + twilioBodyHashParam)
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return nil, unverified("twilio: malformed form body")
	}
	return sortedParams(form), nil
}

// sortedParams concatenates name+value of every parameter, by name and
// then value (a repeated parameter's values are sorted too), an identical
// pair once: what Twilio's helper libraries sign.
func sortedParams(form url.Values) []byte {
	names := make([]string, 0, len(form))
	for name := range form {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []byte
	for _, name := range names {
		values := append([]string(nil), form[name]...)
		sort.Strings(values)
		for i, value := range values {
			if i > 0 && value == values[i-1] {
				continue
			}
			out = append(out, name...)
			out = append(out, value...)
		}
	}
	return out
}

// queryValues returns the values of one parameter of rawURL's query, split
// on "&" only, as Twilio's helper libraries read it.
func queryValues(rawURL, name string) ([]string, error) {
	_, query, _ := strings.Cut(rawURL, "?")
	query, _, _ = strings.Cut(query, "#")
	var out []string
	for pair := range strings.SplitSeq(query, "&") {
		key, value, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err != nil || k != name {
			continue
		}
		v, err := url.QueryUnescape(value)
		if err != nil {
			return nil, unverified("twilio: malformed " + name)
		}
		out = append(out, v)
	}
	return out, nil
}

// twilioURLs is the request URL without a port and with one (the scheme's
// default when it has none), the two spellings Twilio's helper libraries
// accept, because Twilio's signing is inconsistent about ports.
func twilioURLs(raw string) ([]string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, unverified("twilio: no absolute http(s) request URL")
	}
	start := len(u.Scheme) + len("://")
	if len(raw) < start || raw[len(u.Scheme):start] != "://" {
		return nil, unverified("twilio: no absolute http(s) request URL")
	}
	// The authority as spelled in raw: between "://" and the path or query.
	end := start + strings.IndexAny(raw[start:]+"/", "/?#")
	authority := raw[start:end]
	port := u.Port()
	if port == "" {
		defaultPort := "443"
		if u.Scheme == "http" {
			defaultPort = "80"
		}
		return []string{raw, raw[:end] + ":" + defaultPort + raw[end:]}, nil
	}
	host := strings.TrimSuffix(authority, ":"+port)
	return []string{raw[:start] + host + raw[end:], raw}, nil
}
