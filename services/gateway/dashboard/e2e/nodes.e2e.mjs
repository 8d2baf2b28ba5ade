// Nodes and sign-in: the administrator sees the node it talks to, live from
// WatchNodes; signing out asks for a token, and pasting one brings the
// console back.
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
}
