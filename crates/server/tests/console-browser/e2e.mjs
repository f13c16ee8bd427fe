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
    (els) => els.map((e) => e.textContent).join(' ').match(/\bw\d{4}\b/g)?.length || 0);
  check(words === WORDS, `the stored transcript shows ${words} of ${WORDS} words`);
  check(liveParts >= WORDS, `the page drew ${liveParts} live parts, fewer than the ${WORDS} text deltas`);
  summary.longRun = { words, liveParts, liveDrawMs: liveMs, untilLastWordMs: Math.round(drawn), untilStoredMs: Math.round(performance.now() - t0) };

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

  step = 'signing out';
  await page.getByRole('button', { name: 'Sign out' }).click();
  await secretField.waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'signing out leaves the secret in sessionStorage');

  check(problems.length === 0, `the page reported errors:\n  ${problems.join('\n  ')}`);
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
