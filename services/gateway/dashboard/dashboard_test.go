package dashboard_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/switchboard/switchboard/services/gateway/dashboard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHandlerRoutes(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(dashboard.Handler())
	t.Cleanup(hs.Close)

	tests := []struct {
		name        string
		method      string
		path        string
		status      int
		contentType string // for 200
		contains    string // in the body of a GET 200
	}{
		{"page", http.MethodGet, "/", http.StatusOK, "text/html; charset=utf-8", `id="view"`},
		{"page HEAD", http.MethodHead, "/", http.StatusOK, "text/html; charset=utf-8", ""},
		{"script", http.MethodGet, "/dashboard/app.js", http.StatusOK, "text/javascript; charset=utf-8", "views/"},
		{"view module", http.MethodGet, "/dashboard/views/nodes.js", http.StatusOK, "text/javascript; charset=utf-8", "api/admin/cluster/watch"},
		{"style", http.MethodGet, "/dashboard/style.css", http.StatusOK, "text/css; charset=utf-8", ".node-card"},
		{"page as asset", http.MethodGet, "/dashboard/index.html", http.StatusOK, "text/html; charset=utf-8", `id="status"`},
		{"asset HEAD", http.MethodHead, "/dashboard/app.js", http.StatusOK, "text/javascript; charset=utf-8", ""},
		{"unknown asset", http.MethodGet, "/dashboard/missing.js", http.StatusNotFound, "", ""},
		{"asset directory", http.MethodGet, "/dashboard/", http.StatusNotFound, "", ""},
		{"no trailing slash", http.MethodGet, "/dashboard", http.StatusNotFound, "", ""},
		{"embed directory name", http.MethodGet, "/dashboard/static/app.js", http.StatusNotFound, "", ""},
		{"source file", http.MethodGet, "/dashboard/dashboard.go", http.StatusNotFound, "", ""},
		{"asset at root", http.MethodGet, "/app.js", http.StatusNotFound, "", ""},
		{"page by name", http.MethodGet, "/index.html", http.StatusNotFound, "", ""},
		{"other path", http.MethodGet, "/api/admin/cluster", http.StatusNotFound, "", ""},
		{"POST page", http.MethodPost, "/", http.StatusMethodNotAllowed, "", ""},
		{"PUT asset", http.MethodPut, "/dashboard/app.js", http.StatusMethodNotAllowed, "", ""},
		{"DELETE asset", http.MethodDelete, "/dashboard/style.css", http.StatusMethodNotAllowed, "", ""},
		{"POST unknown", http.MethodPost, "/nope", http.StatusNotFound, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), tc.method, hs.URL+tc.path, nil)
			require.NoError(t, err)
			resp, err := hs.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)

			require.Equal(t, tc.status, resp.StatusCode, string(body))
			switch tc.status {
			case http.StatusOK:
				require.Equal(t, tc.contentType, resp.Header.Get("Content-Type"))
				require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
				require.NotEmpty(t, resp.Header.Get("ETag"))
				require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
				if tc.method == http.MethodHead {
					require.Empty(t, body)
				} else {
					require.Contains(t, string(body), tc.contains)
				}
			case http.StatusMethodNotAllowed:
				require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
			}
		})
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	first := httptest.NewRecorder()
	h.ServeHTTP(first, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/dashboard/app.js", nil))
	require.Equal(t, http.StatusOK, first.Code)
	etag := first.Header().Get("ETag")
	require.NotEmpty(t, etag)

	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/dashboard/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	again := httptest.NewRecorder()
	h.ServeHTTP(again, req)
	require.Equal(t, http.StatusNotModified, again.Code)
	require.Empty(t, again.Body.String())
}

// The assets must be self-contained (no CDN, font or other external URL) and
// must never hand network data to the HTML parser: every file under static/,
// each view module included, is fetched through the handler and checked.
func TestAssetsAreSelfContainedAndBuildTheDOMSafely(t *testing.T) {
	t.Parallel()
	h := dashboard.Handler()
	assets := []string{"/"}
	require.NoError(t, filepath.WalkDir("static", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			assets = append(assets, dashboard.AssetPrefix+filepath.ToSlash(strings.TrimPrefix(name, "static"+string(filepath.Separator))))
		}
		return err
	}))
	require.Contains(t, assets, "/dashboard/views/nodes.js")
	for _, asset := range assets {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, asset, nil))
		require.Equal(t, http.StatusOK, rec.Code, asset)
		body := rec.Body.String()
		for _, external := range []string{"http://", "https://", "@import", "url("} {
			require.NotContains(t, body, external, asset)
		}
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			require.NotContains(t, body, sink, asset)
		}
	}
}
