// The verification schemes an endpoint can use: the table the create form
// lists, each provider's setup steps, and the secrets this page generates.
// Not a view: the router never mounts it (no route is named after it).
import { h } from '../lib/dom.js';

// The schemes a person can pick, in the order the form lists them.
// secret: 'generate' (any strong random secret works: generated here when
// left empty), 'provider' (the provider issues it; required), 'later' (the
// provider issues it once it knows the URL: may be added afterwards),
// 'basic' (user:password), 'none'.
export const SCHEMES = [
  { name: 'GITHUB', label: 'GitHub', secret: 'generate', format: 'hex' },
  { name: 'STRIPE', label: 'Stripe', secret: 'later' },
  { name: 'SLACK', label: 'Slack', secret: 'provider' },
  { name: 'SHOPIFY', label: 'Shopify', secret: 'generate', format: 'hex' },
  { name: 'STANDARD_WEBHOOKS', label: 'Standard Webhooks (Svix, Clerk, Resend…)', secret: 'generate', format: 'whsec' },
  { name: 'ZOOM', label: 'Zoom', secret: 'provider' },
  { name: 'META', label: 'Meta (WhatsApp, Messenger, Instagram)', secret: 'provider' },
  { name: 'X', label: 'X (Account Activity API)', secret: 'provider' },
  { name: 'MS_GRAPH', label: 'Microsoft Graph', secret: 'generate', format: 'hex' },
  { name: 'TWILIO', label: 'Twilio', secret: 'provider' },
  { name: 'HMAC_SHA256', label: 'Generic HMAC (any sender)', secret: 'generate', format: 'hex' },
  { name: 'BEARER', label: 'Bearer token', secret: 'generate', format: 'bearer' },
  { name: 'BASIC', label: 'HTTP Basic (user:password)', secret: 'basic' },
  { name: 'NONE', label: 'None (the URL is the only protection)', secret: 'none' },
];
export const PREFIX = 'VERIFICATION_SCHEME_';
const schemeName = (v) => (typeof v === 'string' ? v.replace(PREFIX, '') : String(v ?? ''));
export const schemeOf = (v) => SCHEMES.find((s) => s.name === schemeName(v)) || { name: schemeName(v), label: schemeName(v), secret: 'generate', format: 'hex' };

// The provider's setup steps per scheme, condensed from docs/providers/*.md.
// "URL" and "secret" are the ones this page shows.
const SETUP = {
  GITHUB: [
    'In GitHub open the repository (or organisation, or GitHub App) → Settings → Webhooks → Add webhook.',
    'Payload URL: the webhook URL above.',
    'Content type: application/json.',
    'Secret: the secret above.',
    'Choose the events to send, keep SSL verification on, then Add webhook. GitHub sends a "ping" event at once: it shows up in Events with topic ping.',
  ],
  STRIPE: [
    'In the Stripe Dashboard: Developers → Webhooks → Add destination (older dashboards: Add endpoint).',
    'Choose the events (or all events), destination type Webhook endpoint, and paste the webhook URL above as the Endpoint URL.',
    'On the destination\'s page, Signing secret → Reveal, and add it here with "Rotate secret" (the endpoint refuses every delivery until it has one).',
    'Send a test event and look for it in Events (topic invoice.paid, for example).',
  ],
  SLACK: [
    'The secret is your app\'s Signing Secret (Your Apps → the app → Basic Information → App Credentials).',
    'Event Subscriptions → Enable Events; Request URL: the webhook URL above. Slack sends a signed url_verification that Switchboard answers, and shows Verified.',
    'Subscribe to bot events (app_mention, for example), Save Changes, and reinstall the app if asked.',
  ],
  SHOPIFY: [
    'A store\'s own webhooks: Shopify admin → Settings → Notifications → Webhooks. The key the page says webhooks are signed with is the secret: rotate this endpoint\'s secret to it.',
    'An app\'s webhooks: the app\'s Client secret (Partners or Dev Dashboard → the app → Settings) is the secret.',
    'Create webhook: the event, format JSON, the webhook URL above, and the API version.',
  ],
  STANDARD_WEBHOOKS: [
    'In the provider\'s dashboard add a webhook endpoint (Svix, Clerk: Webhooks → Add Endpoint; Resend: Webhooks → Add Webhook) with the webhook URL above.',
    'If the provider issues the signing secret (whsec_…), rotate this endpoint\'s secret to it; if it lets you set one, paste the secret above.',
    'Send a test event from the provider\'s dashboard.',
  ],
  ZOOM: [
    'The secret is the app\'s Secret Token (Zoom App Marketplace → Develop → the app → Features → Access).',
    'Features → Access → Event Subscription → Add Event Subscription: the Event notification endpoint URL is the webhook URL above; Validate (Switchboard answers Zoom\'s check).',
    'Add Events (Meeting → Start Meeting, for example) and Save.',
  ],
  META: [
    'The secret is the App Secret (Meta for Developers → My Apps → the app → App settings → Basic).',
    'WhatsApp → Configuration → Webhook → Edit (other products: Webhooks → Subscribe to this object). Callback URL: the webhook URL above; Verify token: the verify token you chose here; Verify and save.',
    'Subscribe to the fields you want (WhatsApp: messages).',
  ],
  X: [
    'The secret is the app\'s API Key Secret (developer portal → Projects & Apps → the app → Keys and tokens).',
    'Register the webhook URL above with the Account Activity API\'s webhook registration call; X sends a CRC check that Switchboard answers.',
    'Subscribe the accounts whose activity you want.',
  ],
  MS_GRAPH: [
    'The secret is the subscription\'s clientState.',
    'Create the subscription with Graph\'s subscriptions call: notificationUrl and lifecycleNotificationUrl are the webhook URL above, clientState the secret. Graph validates the URL and Switchboard answers it.',
    'Renew the subscription before its expirationDateTime.',
  ],
  TWILIO: [
    'The secret is the account\'s Auth Token (Twilio Console → Account Info).',
    'Set the endpoint\'s public URL to the webhook URL as Twilio will call it (PATCH public_url): Twilio signs the URL.',
    'Phone Numbers → Manage → Active numbers → the number → Configure: "A message comes in": Webhook, the webhook URL above, HTTP POST; Save.',
  ],
  HMAC_SHA256: [
    'Give the sender the webhook URL above and the secret.',
    'The sender signs the raw body with HMAC (the digest and encoding chosen here) and sends it in the signature header, after the prefix if one is set.',
    'Any content type works; name a topic header or pointer on the endpoint to give events a topic.',
  ],
  BEARER: ['Give the sender the webhook URL above.', 'The sender sends the header "Authorization: Bearer <secret>" with every request.'],
  BASIC: ['Give the sender the webhook URL above.', 'The sender authenticates with HTTP Basic authentication, the user and password of the secret.'],
  NONE: ['Give the sender the webhook URL above: anyone who knows it can post, so keep it private.'],
};

function randomBytes(n) {
  const b = new Uint8Array(n);
  crypto.getRandomValues(b);
  return b;
}
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const b64 = (b) => btoa(String.fromCharCode(...b));
const toBase64Url = (b) => b64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** generateSecret makes a strong secret in the form the scheme reads; '' when it takes none or the provider issues it. */
export function generateSecret(scheme) {
  switch (scheme.secret) {
    case 'generate':
      if (scheme.format === 'whsec') return 'whsec_' + b64(randomBytes(32));
      if (scheme.format === 'bearer') return 'sbw_' + toBase64Url(randomBytes(32));
      return hex(randomBytes(32));
    case 'basic':
      return 'webhook:' + toBase64Url(randomBytes(24));
    default:
      return '';
  }
}

export function setupSteps(ep) {
  const steps = SETUP[schemeName(ep.verification)] || [];
  return h('ol.setup-steps', { 'data-testid': 'setup-steps' }, steps.map((s) => h('li', s)));
}
