// The ingest path end to end in the browser (issue 18): create a GitHub
// endpoint in the Endpoints view, read its secret and URL from the page
// (shown once), post a correctly signed delivery and a badly signed one from
// Node, watch the event arrive live in the Events view, open it (payload,
// headers), open its todo, see a worker dead-letter it and redrive it, replay
// the event, and see the endpoint's deliveries.
import { createHmac, randomUUID } from 'node:crypto';

const text = async (locator) => ((await locator.textContent()) || '').trim();

export default async function (t) {
  const { page } = t;
  const run = Date.now().toString(36);
  const queue = 'e2e-ingest-' + run;
  let secret = '';
  let hookUrl = '';
  let endpointId = '';
  let eventId = '';
  let todoId = '';

  await t.step('create a GitHub endpoint from the Endpoints view', async () => {
    await page.goto(new URL('#/endpoints', t.base).href);
    await page.locator('#new-endpoint').click();
    await page.locator('#endpoint-form').waitFor({ state: 'visible' });
    await page.locator('#endpoint-name').fill('e2e github ' + run);
    await page.locator('#endpoint-queue').fill(queue);
    await page.locator('#endpoint-scheme').selectOption('GITHUB');
    await page.locator('#create-endpoint').click();
    await page.locator('#secret-once').waitFor({ state: 'visible' });
    secret = await text(page.locator('#endpoint-secret-value'));
    hookUrl = await text(page.locator('#endpoint-url-value'));
    if (!/^[0-9a-f]{64}$/.test(secret)) throw new Error('the secret shown once is not 64 hex characters: ' + JSON.stringify(secret));
    if (!/\/hooks\/[A-Za-z0-9_-]{16,64}$/.test(hookUrl) || !hookUrl.startsWith(new URL(t.base).origin)) throw new Error('unexpected webhook URL: ' + hookUrl);
    const note = await text(page.locator('#secret-once'));
    if (!/will not see it again/.test(note)) throw new Error('the secret panel does not warn that the secret is shown once');
    if ((await page.locator('#secret-once [data-testid="setup-steps"] li').count()) < 3) throw new Error('no setup steps for GitHub');
    const m = /#\/endpoints\/([0-9a-f-]{36})/.exec(page.url());
    if (!m) throw new Error('not on the endpoint page after create: ' + page.url());
    endpointId = m[1];
    const ep = (await t.api('GET', 'api/admin/endpoints/' + endpointId)).endpoint;
    if (ep.verification !== 'VERIFICATION_SCHEME_GITHUB' || ep.queue !== queue) throw new Error('endpoint stored wrong: ' + JSON.stringify(ep));
    await page.evaluate(() => window.scrollTo(0, 0));
    await t.shot('endpoint-created');
  });

  await t.step('a signed delivery appears live in the Events view, a badly signed one is refused', async () => {
    await page.goto(new URL('#/events', t.base).href);
    await page.locator('#event-filters').waitFor({ state: 'visible' });
    await page.locator('#status[data-state="live"]').waitFor({ state: 'visible' });
    // Marks this document: a reload would lose it.
    await page.evaluate(() => {
      window.e2eNoReload = true;
    });
    const body = JSON.stringify({ action: 'opened', number: 7, pull_request: { number: 7, title: 'Add routes' }, run });
    const signature = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
    const headers = { 'Content-Type': 'application/json', 'X-GitHub-Event': 'pull_request', 'X-GitHub-Delivery': randomUUID() };
    const good = await fetch(hookUrl, { method: 'POST', headers: { ...headers, 'X-Hub-Signature-256': signature }, body });
    const answer = await good.json().catch(() => ({}));
    if (good.status !== 200 || answer.status !== 'accepted') throw new Error('signed delivery: HTTP ' + good.status + ' ' + JSON.stringify(answer));
    eventId = String(answer.event_id);
    const bad = await fetch(hookUrl, {
      method: 'POST',
      headers: { ...headers, 'X-GitHub-Delivery': randomUUID(), 'X-Hub-Signature-256': 'sha256=' + '0'.repeat(64) },
      body,
    });
    if (bad.status !== 401) throw new Error('a bad signature was answered ' + bad.status + ', not 401');
    const row = page.locator(`tr[data-testid="event-row"][data-event-id="${eventId}"]`);
    await row.waitFor({ state: 'visible' });
    if (!(await page.evaluate(() => window.e2eNoReload === true))) throw new Error('the page reloaded instead of updating live');
    const rowText = await text(row);
    if (!rowText.includes('pull_request') || !rowText.includes('e2e github ' + run)) throw new Error('event row lacks topic or endpoint name: ' + rowText);
    await page.evaluate(() => window.scrollTo(0, 0));
    await t.shot('events');
    await t.narrow(async () => {
      await row.waitFor({ state: 'visible' });
    });
  });

  await t.step('the event page shows the payload as JSON and the headers', async () => {
    await page.locator(`tr[data-testid="event-row"][data-event-id="${eventId}"] a`).first().click();
    await page.waitForFunction((id) => window.location.hash === '#/events/' + id, eventId);
    const pretty = page.locator('#payload-pretty');
    await pretty.waitFor({ state: 'visible' });
    const json = await text(pretty);
    if (!json.includes('"title": "Add routes"')) throw new Error('payload not pretty-printed JSON: ' + json.slice(0, 200));
    const header = page.locator('tr[data-testid="header-row"][data-header="x-github-event"]');
    await header.waitFor({ state: 'visible' });
    if (!(await text(header)).includes('pull_request')) throw new Error('x-github-event header row wrong');
    await page.locator('[data-action="payload-hex"]').click();
    await page.locator('#payload-hex').waitFor({ state: 'visible' });
    await page.locator('[data-action="payload-pretty"]').click();
    await page.locator('[data-testid="todo-link"]').first().waitFor({ state: 'visible' });
    await page.evaluate(() => window.scrollTo(0, 0));
    await t.shot('event-detail');
  });

  await t.step("open the event's todo", async () => {
    const link = page.locator('[data-testid="todo-link"]').first();
    todoId = (await text(link)).replace(/^#/, '');
    const todo = (await t.api('GET', 'api/todos/' + todoId)).todo;
    if (String(todo.event_id) !== eventId || todo.queue !== queue || todo.kind !== 'pull_request') throw new Error('the linked todo is not this event\'s: ' + JSON.stringify(todo));
    await link.click();
    await page.waitForFunction((id) => window.location.hash === '#/todos/' + id, todoId);
    await page.locator(`#todo-detail[data-id="${todoId}"]`).waitFor({ state: 'visible' });
  });

  await t.step('a worker dead-letters the todo; the open page follows it, and Redrive brings it back', async () => {
    // The page is live: the todo turns dead on screen from its queue's
    // lifecycle channel, with no reload, once the worker gives up on it.
    await page.locator(`#todo-detail[data-id="${todoId}"][data-state="pending"][data-live="true"]`).waitFor({ state: 'visible' });
    const claim = await t.api('POST', `api/queues/${queue}:claim`, { worker_id: 'e2e-ingest-worker', max_todos: 1 });
    const claimed = claim.todos && claim.todos[0];
    if (!claimed || claimed.id !== todoId) throw new Error('expected to claim todo ' + todoId + ', got ' + JSON.stringify(claim));
    await t.api('POST', `api/todos/${todoId}:fail`, { lease_token: claimed.lease_token, error: 'pull request is gone', dead_letter: true });
    await page.locator(`#todo-detail[data-id="${todoId}"][data-state="dead"]`).waitFor({ state: 'visible' });
    await page.locator('#todo-actions [data-action="redrive"]').click();
    await page.locator(`#todo-detail[data-id="${todoId}"][data-state="pending"]`).waitFor({ state: 'visible' });
    const got = (await t.api('GET', 'api/todos/' + todoId)).todo;
    if (got.state !== 'TODO_STATE_PENDING') throw new Error('after Redrive the API says ' + got.state);
  });

  await t.step('replay the event: a new todo is listed', async () => {
    await page.goto(new URL('#/events/' + eventId, t.base).href);
    await page.locator('#replay-event').waitFor({ state: 'visible' });
    await page.locator('[data-testid="event-todo"]').first().waitFor({ state: 'visible' });
    await page.locator('#replay-event').click();
    const made = page.locator('[data-testid="replayed-todo"]').first();
    await made.waitFor({ state: 'visible' });
    const newId = (await text(made)).replace(/^todo #/, '');
    if (!/^\d+$/.test(newId) || newId === todoId) throw new Error('replay did not report a new todo: ' + newId);
    await page.locator(`tr[data-testid="event-todo"][data-todo-id="${newId}"]`).waitFor({ state: 'visible' });
    const ev = (await t.api('GET', 'api/events/' + eventId)).event;
    if (Number(ev.replay_count) !== 1) throw new Error('replay_count is ' + ev.replay_count);
  });

  await t.step("the endpoint's page lists its deliveries", async () => {
    await page.goto(new URL('#/endpoints/' + endpointId, t.base).href);
    await page.locator('#endpoint-settings dl').waitFor({ state: 'visible' });
    let haveDeliveries = true;
    try {
      await t.api('GET', 'api/endpoints/' + endpointId + '/deliveries?page_size=10');
    } catch (_) {
      haveDeliveries = false; // ListDeliveries not on this server: the page says so
    }
    if (haveDeliveries) {
      // The delivery log is written in batches within about a second, and a
      // refusal stores no event (so no sys:ingest announces it): until both
      // rows show, the page's Refresh is pressed again at each poll.
      // Outcome names are the enum's without DELIVERY_OUTCOME_.
      await page.waitForFunction(
        () => {
          const rows = [...document.querySelectorAll('tr[data-testid="delivery-row"]')].map((tr) => tr.dataset.outcome);
          const ok = rows.includes('accepted') && rows.some((o) => o.startsWith('rejected') && o.includes('signature'));
          if (!ok) document.querySelector('[data-action="refresh-deliveries"]')?.click();
          return ok;
        },
        null,
        { polling: 500 },
      );
    } else {
      await page.locator('#endpoint-deliveries .notice').waitFor({ state: 'visible' });
    }
    if ((await page.locator('#secret-once').count()) !== 0) throw new Error('the secret is shown again on a later visit');
    await page.evaluate(() => window.scrollTo(0, 0));
    await t.shot('endpoint-detail');
  });

  console.log('ingest: endpoint ' + endpointId + ', event ' + eventId + ', todo ' + todoId + ' in queue ' + queue);
}
