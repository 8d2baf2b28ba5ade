// Schedules: create one from the console's form, see it listed with its next
// fire, change its timing, pause it, and delete it; the API confirms each step.
export default async function (t) {
  const { page, api, step } = t;
  const name = t.unique ? t.unique('e2e-schedule') : 'e2e-schedule-' + Date.now().toString(36);
  const queue = 'e2e-sched-q';
  const row = () => page.locator(`[data-testid="schedule-row"][data-name="${name}"]`);
  const find = async () => ((await api('GET', 'api/schedules?page_size=100')).schedules || []).find((s) => s.name === name);

  await step('create a schedule from the form', async () => {
    await page.goto(new URL('#/schedules', t.base).href);
    await page.locator('#schedules table, #schedules .empty').first().waitFor({ state: 'visible' });
    await page.locator('[data-action="new-schedule"]').click();
    const form = page.locator('[data-testid="schedule-form"]');
    await form.waitFor({ state: 'visible' });
    await form.locator('[data-testid="schedule-name"]').fill(name);
    await form.locator('[data-testid="schedule-cron"]').fill('*/5 * * * *');
    await form.locator('[data-testid="schedule-tz"]').fill('Europe/Berlin');
    await form.locator('[data-testid="schedule-queue"]').fill(queue);
    await form.locator('[data-testid="schedule-kind"]').fill('build_report');
    // Invalid JSON is caught in the browser before anything is sent.
    await form.locator('[data-testid="schedule-payload"]').fill('{"report": ');
    await form.locator('[data-action="create-schedule"]').click();
    await form.locator('.notice[data-kind="error"]').waitFor({ state: 'visible' });
    if (await find()) throw new Error('a schedule was created from an invalid payload');
    await form.locator('[data-testid="schedule-payload"]').fill('{"report": "daily", "format": "pdf"}');
    await form.locator('[data-action="create-schedule"]').click();
    await row().waitFor({ state: 'visible', timeout: 10000 });
  });

  await step('it is listed with its timing and next fire', async () => {
    const text = await row().innerText();
    for (const want of ['*/5 * * * *', 'Europe/Berlin', queue, 'build_report', 'enabled']) {
      if (!text.includes(want)) throw new Error('the row lacks "' + want + '": ' + text);
    }
    const s = await find();
    if (!s) throw new Error('the API does not list ' + name);
    const p = s.template.payload || {};
    if (p.report !== 'daily' || p.format !== 'pdf' || Object.keys(p).length !== 2) throw new Error('payload stored as ' + JSON.stringify(s.template.payload));
    if (!s.next_runs || !s.next_runs.length) throw new Error('no next run: ' + JSON.stringify(s));
    await t.shot('schedules');
  });

  await step('edit its timing', async () => {
    await row().locator('[data-action="edit"]').click();
    const form = page.locator('[data-testid="schedule-edit"]');
    await form.waitFor({ state: 'visible' });
    await form.locator('[data-testid="edit-cron"]').fill('*/10 * * * *');
    await form.locator('[data-action="save-schedule"]').click();
    await form.waitFor({ state: 'detached' });
    await page.waitForFunction((n) => document.querySelector(`[data-testid="schedule-row"][data-name="${n}"]`)?.innerText.includes('*/10 * * * *'), name);
    const s = await find();
    if (!s || s.cron !== '*/10 * * * *') throw new Error('the API says cron = ' + (s && s.cron));
  });

  await step('pause it', async () => {
    await row().locator('[data-action="pause"]').click();
    await page.locator(`[data-testid="schedule-row"][data-name="${name}"][data-paused="true"]`).waitFor({ state: 'visible' });
    const s = await find();
    if (!s || s.paused !== true) throw new Error('the API says paused = ' + (s && s.paused));
  });

  await step('delete it', async () => {
    page.once('dialog', (d) => d.accept());
    await row().locator('[data-action="delete"]').click();
    await row().waitFor({ state: 'detached', timeout: 10000 });
    if (await find()) throw new Error('the API still lists ' + name);
  });
}
