package ingest

import (
	"net/http"
	"strings"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// signedURL is hookURL for the schemes that sign the URL, "" for the others
// (which then cost nothing).
func signedURL(r *http.Request, ep *hookEndpoint) string {
	if ep.Verify.Scheme != verify.SchemeTwilio {
		return ""
	}
	return hookURL(r, ep.PublicURL)
}

// hookURL is the URL the sender requested, for the schemes that sign it
// (Twilio): the endpoint's public URL with the request's query appended as
// received, or else what this node saw (its Host header, and https only
// when this node terminated TLS). X-Forwarded-Host and -Proto are not
// read: the node has no list of proxies to trust, and anyone can send
// them. Behind a proxy or load balancer the derived URL is not the one the
// sender signed, which is what public_url is for.
func hookURL(r *http.Request, publicURL string) string {
	query := ""
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		query = "?" + r.URL.RawQuery
	}
	if publicURL != "" {
		return publicURL + query
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.RequestURI // as received, escapes and all
	if !strings.HasPrefix(path, "/") {
		path = r.URL.EscapedPath() + query // an absolute-form request-target, or a test's request
	}
	return scheme + "://" + r.Host + path
}
