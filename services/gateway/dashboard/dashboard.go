// Package dashboard serves the console of the gateway: one page whose views
// (queues, todos, events, endpoints, schedules, realtime, nodes, settings)
// call the REST API through the gateway with the signed-in token and stay
// live from its streams (realtime lifecycle channels, WatchNodes).
//
// The page is plain HTML, CSS and JavaScript modules embedded in the binary:
// no build step, no external URLs (docs/console.md says how it is built and
// tested). Each view is a module under static/views, loaded when first shown.
//
// Routes (mount Handler on "/" and "/dashboard/"):
//
//	GET /                  the page
//	GET /dashboard/<asset> app.js, style.css, lib/*.js, views/*.js (and index.html)
//
// Anything else is 404; a method other than GET or HEAD on a route is 405.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetPrefix is the URL path under which the page's assets are served.
const AssetPrefix = "/dashboard/"

// contentTypes maps asset extensions to their Content-Type; an embedded file
// with another extension is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// contentSecurityPolicy allows only the page's own script, style and API
// calls, so even a rendering bug cannot run injected script or load anything
// from elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	body        []byte
	contentType string
	etag        string
}

type handler struct {
	page   asset
	assets map[string]asset // by name under AssetPrefix
}

// Handler serves the dashboard page and its assets.
func Handler() http.Handler {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(static, "static", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(name)]
		if e.IsDir() || !ok {
			return nil
		}
		body, err := static.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.assets[strings.TrimPrefix(name, "static/")] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("dashboard: embedded assets unreadable: " + err.Error()) // impossible: go:embed checked at build
	}
	page, ok := h.assets["index.html"]
	if !ok {
		panic("dashboard: embedded index.html missing")
	}
	h.page = page
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var a asset
	switch p := r.URL.Path; {
	case p == "/":
		a = h.page
	case strings.HasPrefix(p, AssetPrefix):
		var ok bool
		if a, ok = h.assets[strings.TrimPrefix(p, AssetPrefix)]; !ok {
			http.NotFound(w, r)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	// no-cache: the browser may keep a copy but must revalidate it (cheap,
	// thanks to the ETag), so a new binary's page is picked up at once.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("Referrer-Policy", "no-referrer")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
