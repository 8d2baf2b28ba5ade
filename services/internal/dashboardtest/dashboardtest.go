//go:build e2e

// Package dashboardtest holds helpers for tests that drive the admin
// dashboard page in a headless Chromium through chromedp.
//
// The browser is Debian's chromium; deploy/local/chromium.sh installs it. A
// missing browser fails the test (it never skips), so a machine without one
// cannot pass the suite by silently testing nothing.
//
// Every file carries the e2e build tag: a test that imports this package
// needs a browser, so it belongs in the e2e tier (services/internal/e2e) and
// cannot compile in the unit or integration tier by accident.
package dashboardtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// WaitTimeout is how long WaitForCards and WaitFor wait for the page.
const WaitTimeout = 30 * time.Second

// closeTimeout bounds the graceful browser shutdown in cleanup.
const closeTimeout = 10 * time.Second

// ChromiumPath returns the browser binary the tests use: $CHROMIUM_BIN, else
// /usr/bin/chromium, else chromium on PATH. It returns an error that says how
// to install one when none is found.
func ChromiumPath() (string, error) {
	// LookPath with a path checks that file only, and that it is executable.
	if p := os.Getenv("CHROMIUM_BIN"); p != "" {
		bin, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("CHROMIUM_BIN: %w", err)
		}
		return bin, nil
	}
	if bin, err := exec.LookPath("/usr/bin/chromium"); err == nil {
		return bin, nil
	}
	if bin, err := exec.LookPath("chromium"); err == nil {
		return bin, nil
	}
	return "", errors.New("no chromium: not at /usr/bin/chromium, not on PATH, and CHROMIUM_BIN is unset")
}

// NewBrowser starts a headless Chromium with a fresh profile and returns a
// chromedp context for one tab of it. The browser is closed, and its profile
// removed, when the test ends.
func NewBrowser(t testing.TB) context.Context {
	t.Helper()
	bin, err := ChromiumPath()
	if err != nil {
		t.Fatalf("dashboardtest: %v; run deploy/local/chromium.sh to install Chromium", err)
	}
	// Created before the cleanups below are registered, so it is removed
	// after the browser has exited (cleanups run last-in, first-out).
	profile := t.TempDir()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(profile),
	)
	// Not t.Context(): that is canceled before cleanups run, which would kill
	// the browser instead of letting it close (and stop writing its profile).
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	t.Cleanup(allocCancel)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(ctx, closeTimeout)
		defer ccancel()
		if err := chromedp.Cancel(cctx); err != nil {
			t.Logf("dashboardtest: closing the browser: %v", err)
		}
		cancel()
	})
	// The first Run starts the browser and ties its life to ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("dashboardtest: start %s: %v", bin, err)
	}
	return ctx
}

// Navigate loads url in the browser tab and waits for its load event.
func Navigate(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("dashboardtest: navigate to %s: %v", url, err)
	}
}

// Reload loads the current page again, as the browser's reload button
// does (navigating to the same URL with a fragment would only move within
// the page).
func Reload(t testing.TB, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatalf("dashboardtest: reload: %v", err)
	}
}

// SetToken stores the bearer token the page sends (localStorage, as a user
// would paste it) for the current origin; navigate again to use it.
func SetToken(t testing.TB, ctx context.Context, token string) {
	t.Helper()
	js := fmt.Sprintf(`localStorage.setItem('switchboard_token', %q)`, token)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
		t.Fatalf("dashboardtest: set token: %v", err)
	}
}

// cardIDs is the list of data-node-id values of the page's node cards.
const cardIDs = `Array.from(document.querySelectorAll('.node-card'), (c) => c.getAttribute('data-node-id'))`

// WaitForCards waits until the page shows exactly one .node-card per id in
// want (in any order), and fails the test with the last set it saw if that
// does not happen within WaitTimeout.
func WaitForCards(t testing.TB, ctx context.Context, want []string) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("dashboardtest: %v", err)
	}
	predicate := fmt.Sprintf(`(() => {
		const want = %s;
		const got = %s;
		const seen = new Set(got);
		return got.length === want.length && seen.size === got.length && want.every((id) => seen.has(id));
	})()`, wantJSON, cardIDs)
	if err := poll(ctx, predicate); err != nil {
		got, gerr := CardIDs(ctx)
		if gerr != nil {
			t.Fatalf("dashboardtest: waiting for cards %q: %v (reading cards: %v)", want, err, gerr)
		}
		slices.Sort(got)
		t.Fatalf("dashboardtest: waiting for cards %q: %v; last seen %q", want, err, got)
	}
}

// CardIDs returns the data-node-id values of the page's node cards, in page
// order.
func CardIDs(ctx context.Context) ([]string, error) {
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](cardIDs))
	if err != nil {
		return nil, fmt.Errorf("read node cards: %w", err)
	}
	return ids, nil
}

// WaitFor waits until the JavaScript expression is truthy in the page, and
// fails the test with what if that does not happen within WaitTimeout.
func WaitFor(t testing.TB, ctx context.Context, what, expression string) {
	t.Helper()
	if err := poll(ctx, expression); err != nil {
		t.Fatalf("dashboardtest: waiting for %s: %v", what, err)
	}
}

// poll evaluates expression in the page every 50 ms until it is truthy, for
// at most WaitTimeout.
func poll(ctx context.Context, expression string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(WaitTimeout)))
	return err
}
