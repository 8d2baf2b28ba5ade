package sources

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxPublicURLLen bounds endpoints.public_url (endpoints_public_url_check).
const maxPublicURLLen = 2048

// checkPublicURL checks an endpoint's public URL: the absolute http(s) URL
// the sender posts to, to which the webhook edge appends the request's query
// for the schemes that sign the URL (Twilio). So it may carry no query or
// fragment of its own, and no credentials (the column is not secret).
func checkPublicURL(raw *string) error {
	if raw == nil {
		return nil
	}
	const field = "endpoint.public_url"
	s := *raw
	if utf8.RuneCountInString(s) > maxPublicURLLen || !utf8.ValidString(s) {
		return invalid(field, "must be at most 2048 characters of UTF-8")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !u.IsAbs() || u.Opaque != "":
		return invalid(field, "must be an absolute URL")
	case (u.Scheme != "http" && u.Scheme != "https") || !strings.HasPrefix(s, u.Scheme+"://"):
		return invalid(field, `must start with "https://" or "http://"`)
	case u.Host == "" || u.Hostname() == "":
		return invalid(field, "must name a host")
	case u.User != nil:
		return invalid(field, "must not carry credentials")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#"):
		return invalid(field, "must not have a query or fragment: the request's query is appended as received")
	case strings.Contains(s, " "):
		// url.Parse refuses control characters, but not spaces.
		return invalid(field, "must not contain spaces")
	}
	return nil
}
