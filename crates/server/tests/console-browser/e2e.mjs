// Drives toolsmith serve's web console in Debian's headless Chromium, as an operator would:
//
//   node e2e.mjs <service URL> <account secret>
//
// The service must have (crates/server/tests/it/console_browser.rs sets it up):
// - agent `calc`: its model calls `calculator` (which needs approval) with 6 * 7, then answers
//   "The answer is …" with the result;
// - agent `chatty`: its model streams WORDS text deltas, `w0001 ` to `w1000 `, after a pause that
//   lets the page start watching.
//
// Checks: a wrong secret is refused; signing in; starting a run from the page; its tool call
// appearing; the approval panel reached with the keyboard alone (Tab) and approved with Enter;
// the run finishing with the model's text; a 1 000-part run rendered whole (its parts counted
// as the page drew them, and its words in the stored transcript), with the time it took;
// the runs list and its filter; the agents; an approval with edited arguments (invalid JSON
// refused on the page first); a denial with a reason; signing out. Any console error (a CSP violation included) or
// uncaught exception fails it. Prints one JSON summary line on success; exits 1 with a message
// (and a screenshot of the moment) on failure.
//
// With TOOLSMITH_CONSOLE_SCREENSHOTS=<dir>, saves the views as PNGs there (scripts/console-
// screenshots.sh, for docs/console.md).

import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const WORDS = 1000;
const CHROMIUM = process.env.TOOLSMITH_CHROMIUM || '/usr/bin/chromium';
const [url, secret] = process.argv.slice(2);
if (!url || !secret) {
  console.error('usage: node e2e.mjs <service URL> <account secret>');
  process.exit(2);
}
const shotsDir = process.env.TOOLSMITH_CONSOLE_SCREENSHOTS ? resolve(process.env.TOOLSMITH_CONSOLE_SCREENSHOTS) : null;
if (shotsDir) mkdirSync(shotsDir, { recursive: true });

const profile = mkdtempSync(join(tmpdir(), 'toolsmith-console-e2e-'));
const problems = [];
const summary = { ok: true, screenshots: [] };
let context;
let page;
let step = 'launching Chromium';

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function shot(name) {
  if (!shotsDir) return;
  // The page down to the end of its content; nothing moving in it: no caret, the pulse stopped.
  const height = await page.evaluate(() => Math.ceil(document.querySelector('main').getBoundingClientRect().bottom + window.scrollY));
  await page.screenshot({
    path: join(shotsDir, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide',
    clip: { x: 0, y: 0, width: 1280, height: Math.max(height, 360) },
  });
  summary.screenshots.push(`${name}.png`);
}

/** The run view's status badge reads `word` (the stored state, read after the stream ended). */
async function runStatus(word, timeout = 30000) {
  await page.locator('.run-facts .badge').filter({ hasText: new RegExp(`^${word}$`) }).waitFor({ timeout });
}

async function startRun(agent, message) {
  await page.getByRole('link', { name: 'Start a run' }).first().click();
  await page.getByRole('heading', { name: 'Start a run', level: 1 }).waitFor();
  const select = page.getByLabel('Agent');
  await page.locator(`#n-agent option[value="${agent}"]`).waitFor({ state: 'attached' });
  await select.selectOption(agent);
  await page.getByLabel('Message').fill(message);
  return select;
}

async function main() {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
    colorScheme: 'light',
    locale: 'en-US',
  });
  page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(20000);
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));

  step = 'opening the sign-in form';
  await page.goto(`${url}/console`);
  const secretField = page.getByLabel('Account secret');
  await secretField.waitFor();

  step = 'signing in with a wrong secret';
  await secretField.fill('ts_nobody_0000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'The secret was not accepted.' }).waitFor();
  // The page's own 401 shows in the console as a failed resource: expected here, not a problem.
  problems.length = 0;

  step = 'signing in';
  await secretField.fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  const stored = await page.evaluate(() => ({ session: Object.keys(sessionStorage), local: localStorage.length }));
  check(stored.session.length === 1 && stored.local === 0, `the secret must be in sessionStorage only: ${JSON.stringify(stored)}`);

  step = 'starting a run that needs an approval';
  await startRun('calc', 'What is 6 * 7?');
  await shot('start-run');
  const began = performance.now();
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForURL(/#\/runs\/.+/);

  step = 'watching the tool call appear';
  const tool = page.locator('.tool[data-tool="calculator"]').first();
  await tool.waitFor();
  await page.getByRole('button', { name: 'Approve' }).waitFor();
  const args = await page.locator('.approval textarea, .approval pre').first().evaluate((el) => el.value ?? el.textContent);
  check(args.includes('6 * 7'), `the approval shows the call's arguments: ${args}`);
  await runStatus('paused');
  await shot('run-approval');

  step = 'reaching Approve with the keyboard, from the top of the reloaded page';
  // The run's own link: the page opens it from the hash, signed in still (the tab's session).
  await page.reload();
  await page.getByRole('button', { name: 'Approve' }).waitFor();
  // From the first stop of the page: its skip link.
  await page.locator('#skip').focus();
  let tabs = 0;
  for (; tabs < 60; tabs++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => document.activeElement?.dataset?.action || null);
    if (at === 'approve') break;
  }
  check(tabs < 60, 'Tab never reached the Approve button');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  check(outline !== 'none', 'the focused Approve button shows no focus outline');
  summary.tabsToApprove = tabs + 1;

  step = 'approving with Enter and seeing the run finish';
  await page.keyboard.press('Enter');
  await page.locator('.transcript .text').filter({ hasText: 'The answer is' }).waitFor({ timeout: 30000 });
  await runStatus('finished');
  const result = await tool.locator('.tool-out').textContent();
  check(/42/.test(result), `the calculator's result is shown: ${result}`);
  check((await tool.getAttribute('data-state')) === 'done', 'the tool call is marked done');
  summary.approvalRunMs = Math.round(performance.now() - began);
  await page.locator('.transcript').evaluate((el) => el.scrollIntoView());
  await shot('run-finished');

  step = `a run of ${WORDS} parts`;
  await startRun('chatty', `Count to ${WORDS}.`);
  // Counts the words drawn in the live view while it is in the document, as they come.
  await page.evaluate(() => {
    window.liveWordsSeen = 0;
    new MutationObserver(() => {
      const text = document.querySelector('.transcript .live')?.textContent || '';
      window.liveWordsSeen = Math.max(window.liveWordsSeen, text.match(/w\d{4} /g)?.length || 0);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const t0 = performance.now();
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForURL(/#\/runs\/.+/);
  const last = `w${String(WORDS).padStart(4, '0')}`;
  await page.locator('.transcript .text').filter({ hasText: last }).first().waitFor({ timeout: 60000 });
  const drawn = performance.now() - t0;
  await runStatus('finished', 60000);
  const run = page.locator('#run');
  const liveParts = Number(await run.getAttribute('data-live-parts'));
  const liveMs = Number(await run.getAttribute('data-live-ms'));
  const words = await page.locator('.transcript .msg-assistant .text').evaluateAll(
    (els) => els.map((e) => e.textContent).join(' ').match(/w\d{4} /g)?.length || 0);
  check(words === WORDS, `the stored transcript shows ${words} of ${WORDS} words`);
  check(liveParts >= WORDS, `the page drew ${liveParts} live parts, fewer than the ${WORDS} text deltas`);
  const liveWords = await page.evaluate(() => window.liveWordsSeen);
  check(liveWords === WORDS, `the live view showed ${liveWords} of the ${WORDS} words as they came`);
  summary.longRun = { words, liveParts, liveWords, liveDrawMs: liveMs, untilLastWordMs: Math.round(drawn), untilStoredMs: Math.round(performance.now() - t0) };

  step = 'a third run, left waiting for its approval';
  await startRun('calc', 'And what is 6 * 7 again?');
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.getByRole('button', { name: 'Approve' }).waitFor();

  step = 'the runs list';
  await page.getByRole('link', { name: 'Runs', exact: true }).click();
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  const rows = page.locator('table.runs tbody tr');
  await rows.nth(2).waitFor();
  check(await rows.count() === 3, `the runs list shows the 3 runs, not ${await rows.count()}`);
  await page.getByLabel('Status').selectOption('paused');
  await page.waitForFunction(() => document.querySelectorAll('table.runs tbody tr').length === 1);
  check(await rows.first().locator('.badge').textContent() === 'paused', 'the paused filter shows the paused run');
  await page.getByLabel('Status').selectOption('failed');
  await page.locator('.empty').filter({ hasText: 'No runs match' }).waitFor();
  await page.getByLabel('Status').selectOption('');
  await rows.nth(2).waitFor();
  await page.locator('h1').focus();
  await shot('runs');

  step = 'the agents';
  await page.getByRole('link', { name: 'Agents', exact: true }).click();
  await page.getByRole('heading', { name: 'calc', level: 2 }).waitFor();
  await page.locator('.tool-name').filter({ hasText: 'calculator' }).first().waitFor();
  await shot('agents');

  step = 'approving the paused run with edited arguments';
  await page.getByRole('link', { name: 'Runs', exact: true }).click();
  await page.locator('table.runs tbody tr').filter({ hasText: 'paused' }).getByRole('link').click();
  const edit = page.getByLabel('Edit arguments (JSON)');
  await edit.fill('{"expression": "2 + 2"');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.locator('.field-error').filter({ hasText: 'not valid JSON' }).waitFor();
  check(await edit.getAttribute('aria-invalid') === 'true', 'invalid arguments are marked invalid');
  await edit.fill('{"expression": "2 + 2"}');
  check(await page.locator('.field-error').count() === 0 || !(await page.locator('.field-error').textContent()), 'valid arguments clear the error');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.locator('.transcript .text').filter({ hasText: 'The answer is 2 + 2 = 4.' }).waitFor({ timeout: 30000 });
  await runStatus('finished');

  step = 'denying a call with a reason';
  await startRun('calc', 'What is 6 * 7, once more?');
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.getByLabel('Reason (optional)').fill('Not today');
  await page.getByRole('button', { name: 'Deny' }).click();
  await page.locator('.tool .denied').filter({ hasText: 'Denied: Not today' }).waitFor({ timeout: 30000 });
  await runStatus('finished');

  await fixtures();

  step = 'signing out';
  await page.getByRole('button', { name: 'Sign out' }).click();
  await secretField.waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'signing out leaves the secret in sessionStorage');

  check(problems.length === 0, `the page reported errors:\n  ${problems.join('\n  ')}`);
}

// A run the mock model cannot make, served to the page by intercepting its API calls: a
// sub-agent's paused run inside its call, reasoning, an error and a denial, a sub-agent's
// approval, live parts nested two sub-agents deep — and hostile text everywhere, which must
// stay text.
const HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';

function fixtureRun(live) {
  const calc = (id) => ({ type: 'tool-call', toolCallId: id, toolName: 'calculator', input: { expression: HOSTILE } });
  return {
    run: { threadId: 'fixture', agentId: 'calc', conversationKey: 'fixture', status: 'paused', pending: 1,
      messageCount: 3, createdAt: Date.now() - 60000, updatedAt: Date.now(), live, parentId: null },
    messages: [
      { role: 'user', content: [{ type: 'text', text: `Look into ${HOSTILE}` }] },
      { role: 'assistant', content: [
        { type: 'reasoning', text: 'The user wants a look.' },
        { type: 'text', text: HOSTILE },
        calc('c1'), calc('c2'),
        { type: 'tool-call', toolCallId: 'c3', toolName: 'scout', input: { task: 'dig' } },
        { type: 'nested-run', toolCallId: 'c3', toolName: 'scout', runId: 'r:c3', tags: ['name:scout'], pending: [],
          messages: [
            { role: 'user', content: [{ type: 'text', text: 'dig' }] },
            { role: 'assistant', content: [{ type: 'text', text: `Child found ${HOSTILE}` }, calc('k1'),
              { type: 'tool-approval-request', approvalId: 'apr_k1', toolCallId: 'k1', toolName: 'calculator', input: {} }] },
          ] },
      ], meta: { model: 'gpt-4o', provider: 'openai', finishReason: 'tool-calls', usage: { input: { total: 120 }, output: { total: 14 } }, durationMs: 812 } },
      { role: 'tool', content: [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'calculator', output: { type: 'error-text', value: `boom ${HOSTILE}` } },
        { type: 'tool-result', toolCallId: 'c2', toolName: 'calculator', output: { type: 'execution-denied', reason: HOSTILE } },
      ], meta: { calls: { c1: 38 } } },
    ],
    journal: [], asyncTools: [], usage: { input: { total: 120 }, output: { total: 14 } },
    pending: [{ kind: 'approval', toolCallId: 'k1', toolName: 'calculator', input: {}, approvalId: 'apr_k1', path: ['c3'], editable: true }],
  };
}

const FIXTURE_STREAM = [
  { type: 'start-step', step: 1 },
  { type: 'reasoning-start', id: 'r1' }, { type: 'reasoning-delta', id: 'r1', text: 'Live thought.' },
  { type: 'text-start', id: 't1' }, { type: 'text-delta', id: 't1', text: `Live ${HOSTILE}` },
  { type: 'tool-call', toolCallId: 'c9', toolName: 'scout', input: { task: 'again' } },
  { type: 'nested', path: [{ toolCallId: 'c9', toolName: 'scout' }], part: { type: 'text-delta', id: 'n1', text: 'Nested words.' } },
  { type: 'nested', path: [{ toolCallId: 'c9', toolName: 'scout' }, { toolCallId: 'd1', toolName: 'digger' }],
    part: { type: 'tool-call', toolCallId: 'z1', toolName: 'calculator', input: { expression: '1 + 1' } } },
  { type: 'nested', path: [{ toolCallId: 'c9', toolName: 'scout' }, { toolCallId: 'd1', toolName: 'digger' }],
    part: { type: 'tool-error', toolCallId: 'z1', toolName: 'calculator', input: {}, error: { code: 'x', message: `Deep failure ${HOSTILE}` } } },
  { type: 'tool-output-denied', toolCallId: 'c8', toolName: 'calculator', reason: 'Not now' },
].map((p) => `data: ${JSON.stringify(p)}\n\n`).join(': keep-alive\n\n');

async function fixtures() {
  step = 'a fixture run: sub-agents, errors, denials and hostile text';
  let reads = 0;
  let releaseStored;
  const storedRead = new Promise((resolve) => { releaseStored = resolve; });
  await page.route('**/console/api/runs/fixture', async (route) => {
    reads += 1;
    // The read after the stream ends waits until the live view has been checked.
    if (reads > 1) await storedRead;
    await route.fulfill({ json: fixtureRun(reads === 1) });
  });
  await page.route('**/console/api/runs/fixture/live', (route) =>
    route.fulfill({ status: 200, contentType: 'text/event-stream', body: FIXTURE_STREAM }));
  await page.evaluate(() => { location.hash = '#/runs/fixture'; });

  const live = page.locator('.transcript .live');
  await live.locator('.nested .nested .tool[data-tool="calculator"][data-state="error"]').waitFor();
  check(await live.locator('.tool[data-tool="scout"] > .nested .text').first().textContent() === 'Nested words.',
    'a sub-agent\'s live text is drawn in its call');
  check((await live.locator('.tool[data-call="c8"] .denied').textContent()) === 'Denied: Not now', 'a live denial is drawn');
  check((await live.textContent()).includes(`Live ${HOSTILE}`), 'live hostile text is shown as text');
  releaseStored();

  const transcript = page.locator('.transcript');
  await live.waitFor({ state: 'detached' });
  check(await transcript.locator('details.reasoning:not([open])').count() === 1, 'stored reasoning is folded');
  check(await transcript.locator('.tool[data-call="c1"]').getAttribute('data-state') === 'error', 'an error result marks its call');
  check((await transcript.locator('.tool[data-call="c1"] .tool-out').textContent()).includes(`boom ${HOSTILE}`), 'the error text is shown');
  check(await transcript.locator('.tool[data-call="c2"]').getAttribute('data-state') === 'denied', 'a denied call is marked denied');
  const child = transcript.locator('.tool[data-call="c3"] > .nested');
  check((await child.textContent()).includes(`Child found ${HOSTILE}`), 'the paused sub-agent\'s run is shown in its call');
  check(await child.locator('.tool[data-call="k1"]').getAttribute('data-state') === 'waiting for approval', 'the sub-agent\'s call waits for approval');
  check((await page.locator('.approval h3').textContent()).includes('in sub-agent call c3'), 'the approval names the sub-agent call it is in');
  check((await transcript.locator('.step-meta').first().textContent()).includes('openai:gpt-4o · tool-calls · 120 in · 14 out tokens · 812 ms'),
    'the step\'s record is shown');
  const injected = await page.evaluate(() => ({ pwned: window.pwned ?? null, images: document.querySelectorAll('main img').length,
    scripts: document.querySelectorAll('main script').length }));
  check(injected.pwned === null && injected.images === 0 && injected.scripts === 0, `hostile text became markup: ${JSON.stringify(injected)}`);
  await page.unrouteAll();
}

try {
  await main();
  console.log(JSON.stringify(summary));
} catch (error) {
  let where = '';
  if (page) {
    const path = join(tmpdir(), 'toolsmith-console-e2e-failure.png');
    where = await page.screenshot({ path, fullPage: true }).then(() => `\nscreenshot: ${path}\npage URL: ${page.url()}`, () => '');
  }
  console.error(`console e2e failed while ${step}: ${error.message}${where}${problems.length ? `\npage errors:\n  ${problems.join('\n  ')}` : ''}`);
  process.exitCode = 1;
} finally {
  await context?.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
}
