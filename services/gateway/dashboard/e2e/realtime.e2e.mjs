// The Realtime view: open a channel's live tail, publish three messages
// through the API and one through the page's form, and see all four in
// order (newest on top); Presence lists the console's own subscription.
const text = async (locator) => ((await locator.textContent()) || '').trim();

export default async function (t) {
  const { page } = t;
  const channel = 'e2e:tail-' + Date.now().toString(36);

  await t.step('open a channel by name', async () => {
    await page.goto(new URL('#/realtime', t.base).href);
    await page.locator('#channel-name').fill(channel);
    await page.locator('[data-action="open-channel"]').click();
    await page.waitForFunction((c) => decodeURIComponent(window.location.hash) === '#/realtime/' + c, channel);
    await page.locator('#tail-panel').waitFor({ state: 'visible' });
    await page.locator('#status[data-state="live"]').waitFor({ state: 'visible' });
  });

  await t.step("presence shows the console's own subscription", async () => {
    const me = page.locator('tr[data-testid="presence-member"]').first();
    await me.waitFor({ state: 'visible' });
    const member = await me.getAttribute('data-member');
    if (!/^(human|agent):[0-9a-f-]{36}$/.test(member || '')) throw new Error('unexpected presence member: ' + member);
    const presence = await t.api('GET', 'api/realtime/channels/' + encodeURIComponent(channel) + '/presence');
    if (!(presence.members || []).some((m) => m.member === member)) throw new Error('the API does not list ' + member + ' on ' + channel);
  });

  await t.step('three messages published through the API and one from the form arrive in order', async () => {
    for (let n = 1; n <= 3; n++) {
      const res = await t.api('POST', 'api/realtime/channels/' + encodeURIComponent(channel) + '/messages', { kind: 'e2e.api', payload: { n }, durable: true });
      if (!(Number(res.id) > 0)) throw new Error('durable publish returned no id: ' + JSON.stringify(res));
      // Each waits for its own arrival, so the order below is the publish order.
      await page.locator('li[data-testid="tail-message"][data-kind="e2e.api"]').nth(n - 1).waitFor({ state: 'visible' });
    }
    await page.locator('#publish-kind').fill('e2e.form');
    await page.locator('#publish-payload').fill('{"n": 4, "from": "form"}');
    await page.locator('#publish-submit').click();
    await page.locator('li[data-testid="tail-message"][data-kind="e2e.form"]').waitFor({ state: 'visible' });
    const items = await page.locator('li[data-testid="tail-message"]').evaluateAll((els) =>
      els.filter((e) => e.dataset.kind.startsWith('e2e.')).map((e) => ({ kind: e.dataset.kind, id: Number(e.dataset.id), durable: e.dataset.durable, payload: e.querySelector('pre')?.textContent || '' })),
    );
    const ns = items.map((i) => JSON.parse(i.payload).n);
    if (ns.join(',') !== '4,3,2,1') throw new Error('tail order (newest first) is ' + ns.join(',') + ', want 4,3,2,1');
    if (items.some((i) => i.durable !== 'true' || !(i.id > 0))) throw new Error('messages not shown as durable with ids: ' + JSON.stringify(items));
    for (let i = 1; i < items.length; i++) {
      if (!(items[i - 1].id > items[i].id)) throw new Error('ids are not newest first: ' + items.map((x) => x.id).join(','));
    }
    if (!(await text(page.locator('#tail-count'))).startsWith(String(await page.locator('li[data-testid="tail-message"]').count()))) throw new Error('message count not shown');
    await page.evaluate(() => window.scrollTo(0, 0));
    await t.shot('realtime');
  });

  await t.step('pause holds new messages until resume', async () => {
    await page.locator('#tail-pause').click();
    await t.api('POST', 'api/realtime/channels/' + encodeURIComponent(channel) + '/messages', { kind: 'e2e.paused', payload: { n: 5 }, durable: true });
    await page.waitForFunction(() => /1 waiting/.test(document.getElementById('tail-count').textContent));
    if ((await page.locator('li[data-kind="e2e.paused"]').count()) !== 0) throw new Error('a message was shown while paused');
    await page.locator('#tail-pause').click();
    await page.locator('li[data-kind="e2e.paused"]').waitFor({ state: 'visible' });
    await page.locator('#tail-clear').click();
    await page.locator('#tail-empty').waitFor({ state: 'visible' });
  });

  await t.step('the channel list shows the channel while another tab tails it', async () => {
    let listed = true;
    try {
      await t.api('GET', 'api/realtime/channels?page_size=1');
    } catch (_) {
      listed = false; // ListChannels not on this server: the list says so
    }
    const other = await page.context().newPage(); // same storage: signed in too
    try {
      await other.goto(new URL('#/realtime/' + encodeURIComponent(channel), t.base).href);
      await other.locator('#status[data-state="live"]').waitFor({ state: 'visible' });
      await page.goto(new URL('#/realtime?prefix=e2e%3A', t.base).href);
      if (listed) {
        const row = page.locator(`tr[data-testid="channel-row"][data-channel="${channel}"]`);
        await row.waitFor({ state: 'visible' });
        // The other tab's stream at least; this tab's own, just closed, may
        // not have been swept yet.
        const cells = await row.locator('td').allTextContents();
        if (!(Number(cells[1]) >= 1 && Number(cells[2]) >= 1)) throw new Error('the channel should have a subscriber (the other tab), the row says: ' + cells.join(' | '));
      } else {
        await page.locator('#channels-body .notice').waitFor({ state: 'visible' });
      }
      await page.evaluate(() => window.scrollTo(0, 0));
      await t.shot('realtime-channels');
    } finally {
      await other.close();
    }
  });
}
