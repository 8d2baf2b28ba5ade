// The administrator's views and sign-in: the node it talks to, live from
// WatchNodes; a setting edited from Settings; signing out asks for a token,
// and pasting one brings the console back.
export default async function (t) {
  const { page } = t;

  await t.step('the nodes view shows this node, live', async () => {
    await page.locator('#nav a[data-view="nodes"]').click();
    await page.locator('.node-card').first().waitFor();
    await page.waitForFunction(() => document.getElementById('status').textContent === 'live');
    const services = await page.locator('.node-card .service').allTextContents();
    for (const s of ['gateway', 'queue', 'ingest', 'realtime', 'registry']) {
      if (!services.includes(s)) throw new Error(`the card lists services ${services.join(', ')}, not ${s}`);
    }
    if ((await page.locator('.node-card .stats dt').count()) === 0) throw new Error('the card shows no stats');
    await t.shot('nodes');
  });

  await t.step('sign out, then sign in with the token', async () => {
    await page.locator('#signout').click();
    await page.locator('#signin').waitFor();
    await t.shot('signin');
    await page.locator('#token').fill(t.token);
    await page.locator('#signin button[type="submit"]').click();
    await page.locator('#signin').waitFor({ state: 'hidden' });
    await page.locator('#view .node-card').first().waitFor();
  });

  await t.step('a bad token is refused and the panel says so', async () => {
    await page.locator('#signout').click();
    await page.locator('#token').fill('sbt_not-a-real-token');
    await page.locator('#signin button[type="submit"]').click();
    await page.waitForFunction(() => document.getElementById('token').getAttribute('aria-invalid') === 'true');
    await page.locator('#token').fill(t.token);
    await page.locator('#signin button[type="submit"]').click();
    await page.locator('#signin').waitFor({ state: 'hidden' });
  });

  await t.step('edit a setting from the Settings view', async () => {
    await page.locator('#nav a[data-view="settings"]').click();
    const row = page.locator('tr[data-testid="setting-row"]').first();
    await row.waitFor();
    const key = await row.getAttribute('data-key');
    const before = (await t.api('GET', 'api/admin/settings/' + encodeURIComponent(key))).setting;
    await t.shot('settings');
    const note = 'edited from the console (' + t.unique('e2e') + ')';
    await row.locator('[data-action="edit"]').click();
    const form = page.locator(`[data-testid="setting-form"][data-key="${key}"]`);
    await form.locator('[data-testid="setting-description"]').fill(note);
    await form.locator('[data-action="save-setting"]').click();
    await page.locator(`tr[data-testid="setting-row"][data-key="${key}"]`, { hasText: note }).waitFor();
    const after = (await t.api('GET', 'api/admin/settings/' + encodeURIComponent(key))).setting;
    if (after.description !== note) throw new Error('the API has description ' + JSON.stringify(after.description));
    if (JSON.stringify(after.value) !== JSON.stringify(before.value)) throw new Error('saving the description changed the value');
    await t.api('PATCH', 'api/admin/settings/' + encodeURIComponent(key), { description: before.description });
  });
}
