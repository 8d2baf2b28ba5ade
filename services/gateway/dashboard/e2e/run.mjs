// run.mjs drives the console in Debian's Chromium with playwright-core: it
// runs one spec file (an *.e2e.mjs module in this directory) against a live
// node and exits non-zero when a step fails, the page throws, or the page
// breaks its Content-Security-Policy.
//
//   PLAYWRIGHT_DIR=$(deploy/local/playwright.sh) CONSOLE_BASE=http://127.0.0.1:8080/ \
//   CONSOLE_TOKEN=sbt_… [CHROMIUM_BIN=/usr/bin/chromium] [SCREENSHOT_DIR=docs/console] \
//   node run.mjs queues.e2e.mjs
//
// services/cmd/switchboard TestConsoleEndToEnd boots the node and runs every
// spec; `make console-screenshots` runs them with SCREENSHOT_DIR=docs/console.
//
// A spec exports `default async function (t)`; t is documented at makeT.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (name, fallback) => {
  const v = process.env[name] || fallback;
  if (!v) {
    console.error(`run.mjs: ${name} is not set`);
    process.exit(2);
  }
  return v;
};

const base = env('CONSOLE_BASE').replace(/\/?$/, '/');
const token = env('CONSOLE_TOKEN');
const chromiumBin = env('CHROMIUM_BIN', '/usr/bin/chromium');
const shotDir = process.env.SCREENSHOT_DIR || '';
const spec = process.argv[2];
if (!spec) {
  console.error('usage: node run.mjs <spec.e2e.mjs>');
  process.exit(2);
}
const { chromium } = createRequire(join(resolve(env('PLAYWRIGHT_DIR')), 'package.json'))('playwright-core');

// Desktop and phone sizes for the screenshots in docs/console.md.
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
// A step that needs longer than this is stuck, not slow.
const STEP_TIMEOUT_MS = 60000;

/** problems collects what the page did wrong outside any step's checks. */
const problems = [];

// api calls the REST API from Node with the administrator's token.
async function api(method, path, body, headers = {}) {
  const resp = await fetch(new URL(path.replace(/^\//, ''), base), {
    method,
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${path}: HTTP ${resp.status}: ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : {};
}

/**
 * makeT is what a spec gets:
 *   page       a Page at the console, signed in with the administrator token
 *   base       the node's HTTP base URL ("http://127.0.0.1:PORT/")
 *   token      the administrator token
 *   api(method, path, body, headers)  the REST API from Node; JSON answer; throws on HTTP error
 *   step(name, fn)   runs one named step (logged, timed, its failure names it)
 *   shot(name)       a full-page screenshot <name>.png into SCREENSHOT_DIR (none without it)
 *   narrow(fn)       runs fn at phone width, then restores the desktop size
 *   unique(prefix)   a name unique to this run ("prefix-3f2a1c")
 */
function makeT(page) {
  const run = createHash('sha256').update(String(process.hrtime.bigint())).digest('hex').slice(0, 6);
  return {
    page,
    base,
    token,
    api,
    unique: (prefix) => `${prefix}-${run}`,
    async step(name, fn) {
      const started = Date.now();
      let timer;
      try {
        await Promise.race([
          fn(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`step timed out after ${STEP_TIMEOUT_MS / 1000}s`)), STEP_TIMEOUT_MS);
          }),
        ]);
      } catch (err) {
        err.message = `step "${name}": ${err.message}`;
        throw err;
      } finally {
        clearTimeout(timer);
      }
      console.log(`  ok  ${name} (${Date.now() - started} ms)`);
    },
    async shot(name) {
      if (!shotDir) return;
      // Fonts and layout settle before the picture; no animation is caught
      // mid-way, and no passing toast covers the view.
      await page.evaluate(() => {
        document.getElementById('toasts')?.replaceChildren();
        return document.fonts.ready;
      });
      await page.screenshot({ path: join(shotDir, name + '.png'), fullPage: true, animations: 'disabled' });
      console.log(`  shot ${name}.png`);
    },
    async narrow(fn) {
      await page.setViewportSize(PHONE);
      try {
        await fn();
      } finally {
        await page.setViewportSize(DESKTOP);
      }
    },
  };
}

async function main() {
  if (shotDir) mkdirSync(shotDir, { recursive: true });
  const mod = await import(pathToFileURL(resolve(import.meta.dirname, spec)).href);
  const browser = await chromium.launch({
    executablePath: chromiumBin,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const context = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light', locale: 'en-GB', timezoneId: 'UTC' });
    context.setDefaultTimeout(30000);
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push('uncaught exception: ' + err.message));
    page.on('console', (msg) => {
      const text = msg.text();
      // A CSP violation is logged as a console error by Chromium; a failed
      // request the spec provoked (a 403 it checks) is not a problem.
      if (msg.type() === 'error' && /Content Security Policy|Refused to/.test(text)) problems.push('CSP: ' + text);
    });
    await page.goto(base);
    await page.evaluate((tok) => localStorage.setItem('switchboard_token', tok), token);
    await page.goto(base);
    await page.locator('#nav a').first().waitFor();
    console.log(`spec ${spec}`);
    await mod.default(makeT(page));
    if (problems.length) throw new Error('the page misbehaved:\n  ' + problems.join('\n  '));
    console.log(`PASS ${spec}`);
  } finally {
    await browser.close();
  }
}

main().catch((err) => {
  console.error(`FAIL ${spec}: ${err.stack || err}`);
  process.exit(1);
});
