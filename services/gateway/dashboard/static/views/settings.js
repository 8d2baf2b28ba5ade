// Settings: the deployment-wide defaults (retention, queue defaults), the
// administrator's. ListSettings shows each key with its description, value
// and value type as the API gives them; Edit changes the value (JSON, of the
// same shape the server checks per key) and the description (UpdateSetting).
import * as api from '../lib/api.js';
import { ago, errorText, field, h, notice, number, table } from '../lib/dom.js';
import { btn, busy, loading } from './queue-common.js';

const enc = encodeURIComponent;

function typeOf(v) {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v; // object, number, string, boolean
}

function shape(v) {
  if (typeOf(v) !== 'object') return typeOf(v);
  return 'object {' + Object.entries(v).map(([k, x]) => k + ': ' + typeOf(x)).join(', ') + '}';
}

// valueView shows an object value as one "key value" line per field, any
// other value as compact JSON.
function valueView(v) {
  if (typeOf(v) !== 'object') return h('code.setting-value', { dataset: { testid: 'setting-current' } }, JSON.stringify(v ?? null));
  return h(
    'ul.setting-kv',
    { dataset: { testid: 'setting-current' } },
    Object.entries(v).map(([k, x]) => h('li', h('span.k', k), ' ', h('code.setting-value', typeof x === 'number' ? number(x) : JSON.stringify(x)))),
  );
}

export async function mount(root, ctx) {
  const message = h('div', { id: 'settings-message' });
  const editor = h('div', { id: 'setting-editor' });
  const list = h('div', { id: 'settings' }, loading('Loading settings…'));
  root.append(h('header.view-head', h('h1', 'Settings'), h('small.hint', 'Deployment-wide defaults; every tenant shares them.')), message, editor, list);

  let settings = [];
  const closeEditor = () => editor.replaceChildren();

  function edit(s) {
    const value = h('textarea', { name: 'value', rows: '6', spellcheck: 'false', dataset: { testid: 'setting-value' } }, JSON.stringify(s.value ?? null, null, 2));
    const description = h('textarea', { name: 'description', rows: '3', dataset: { testid: 'setting-description' } }, s.description || '');
    const valueMsg = h('span');
    const msg = h('div');
    const save = btn('Save', { kind: 'primary', type: 'submit', action: 'save-setting' });
    const expected = shape(s.value);
    const form = h(
      'form.panel.setting-form',
      { dataset: { testid: 'setting-form', key: s.key } },
      h('h2', 'Edit ', h('code', s.key)),
      msg,
      field('Value (JSON)', value, h('span', 'Current type: ', h('code', expected), '. ', valueMsg)),
      field('Description', description),
      h('div.form-actions', save, btn('Cancel', { onclick: closeEditor })),
    );
    const check = () => {
      try {
        const v = JSON.parse(value.value);
        valueMsg.textContent = shape(v) === expected ? '' : 'Now ' + shape(v) + ': the server checks the shape per key.';
        value.removeAttribute('aria-invalid');
        return { ok: true, v };
      } catch (err) {
        valueMsg.textContent = 'Not valid JSON: ' + err.message;
        value.setAttribute('aria-invalid', 'true');
        return { ok: false };
      }
    };
    value.addEventListener('input', check);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      msg.replaceChildren();
      const parsed = check();
      if (!parsed.ok) {
        msg.replaceChildren(notice('The value is not valid JSON.'));
        return;
      }
      const body = {};
      if (JSON.stringify(parsed.v) !== JSON.stringify(s.value ?? null)) body.value = parsed.v;
      if (description.value !== (s.description || '')) body.description = description.value;
      if (!Object.keys(body).length) {
        closeEditor();
        return;
      }
      try {
        const res = await busy(save, () => api.patch('api/admin/settings/' + enc(s.key), body, ctx.signal));
        ctx.toast('Setting ' + s.key + ' saved');
        settings = settings.map((x) => (x.key === s.key ? res.setting : x));
        closeEditor();
        render();
      } catch (err) {
        if (err.name === 'AbortError') return;
        msg.replaceChildren(notice(err.status === 403 ? 'Only an administrator may change settings: ' + err.message : errorText(err)));
      }
    });
    editor.replaceChildren(form);
    form.scrollIntoView({ block: 'nearest' });
    value.focus();
  }

  const columns = [
    { label: 'Key', className: 'mono', cell: (s) => h('strong', s.key) },
    { label: 'Description', cell: (s) => s.description || h('span.hint', 'no description') },
    { label: 'Value', className: 'value-cell', cell: (s) => valueView(s.value) },
    { label: 'Type', className: 'mono', cell: (s) => typeOf(s.value) },
    { label: 'Changed', cell: (s) => (s.updated_at ? ago(s.updated_at) : '—') },
    { label: '', className: 'actions-cell', cell: (s) => btn('Edit', { action: 'edit', onclick: () => edit(s) }) },
  ];

  function render() {
    const t = table(columns, settings, { label: 'Settings', empty: 'No settings: the database has not been migrated (switchboard migrate up seeds them).' });
    for (const [i, tr] of [...t.querySelectorAll('tbody tr')].entries()) {
      tr.dataset.testid = 'setting-row';
      tr.dataset.key = settings[i].key;
    }
    list.replaceChildren(t);
  }

  try {
    const body = await api.get('api/admin/settings', undefined, ctx.signal);
    settings = body.settings || [];
    render();
  } catch (err) {
    if (err.name === 'AbortError') return;
    list.replaceChildren(notice(err.status === 403 ? 'Settings are the administrator\'s: this token may not read them.' : errorText(err)));
  }
}
