// Feedback (issue 36): a thumbs down with a comment on an answer and a note on a tool call, both
// shown after a reload (the server's render, then hydration, with no console or hydration
// problem), edited and removed; the note and the rating shown on the trace page too.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';

let server;
let browser;

before(async () => {
  server = await startServer({
    scenarios: {
      work: {
        delta_interval_ms: 0,
        steps: [
          { reasoning: ['thinking about where to look'] },
          { tool_calls: [{ name: 'list_dir', args: { path: '.' } }] },
          { text: 'The answer, after a look around.' },
        ],
      },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A finished run, made through the API: its ids and its tool call's id. */
async function finishedRun(question) {
  const started = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: question, model: 'scenario:work' }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${started.run_id}/events`).then((response) => response.text());
  const read = await fetch(`${server.url}/api/conversations/${started.conversation_id}`).then((r) => r.json());
  const message = read.messages.find((m) => m.id === started.message_id);
  const call = message.segments.find((segment) => segment.type === 'tool_call');
  return { ...started, callId: call.call_id };
}

async function go(page, path) {
  await page.goto(`${server.url}${path}`);
  await waitForHydration(page);
}

test('feedback on an answer and a note on a tool call hold after a reload, are edited and removed', async () => {
  const run = await finishedRun('where is the config?');
  const { page, context, problems } = await openPage(browser);
  await go(page, `/c/${run.conversation_id}`);
  const answer = page.locator(`article[data-message-id="${run.message_id}"]`);
  const note = answer.locator(`.step-note[data-note-for="${run.callId}"]`);

  // Thumbs down, then a comment (plain text, never markup).
  await answer.locator('.thumb-down').click();
  await answer.locator('.thumb-down[aria-pressed="true"]').waitFor();
  await answer.locator('.feedback-comment-toggle').click();
  await answer.locator('.answer-feedback textarea').fill('misses the <b>point</b>');
  await answer.locator('.answer-feedback .save-note').click();
  await answer.locator('.feedback-text', { hasText: 'misses the <b>point</b>' }).waitFor();
  // A note on the tool call.
  await note.locator('.note-add').click();
  await note.locator('textarea').fill('looked in the wrong directory');
  await note.locator('.save-note').click();
  await note.locator('.note-text', { hasText: 'looked in the wrong directory' }).waitFor();

  // After a reload: the server's render, hydrated.
  await page.reload();
  await waitForHydration(page);
  assert.equal(await answer.locator('.thumb-down').getAttribute('aria-pressed'), 'true');
  assert.equal(await answer.locator('.thumb-up').getAttribute('aria-pressed'), 'false');
  assert.equal(await answer.locator('.feedback-text').innerText(), 'misses the <b>point</b>');
  assert.equal(await answer.locator('.answer-feedback b').count(), 0, 'the comment is text');
  assert.equal(await note.locator('.note-text').innerText(), 'looked in the wrong directory');

  // Esc cancels an edit; then an edit is saved, and the thumb changes.
  await note.locator('.note-edit').click();
  await note.locator('textarea').fill('never saved');
  await note.locator('textarea').press('Escape');
  await note.locator('textarea').waitFor({ state: 'detached' });
  assert.equal(await note.locator('.note-text').innerText(), 'looked in the wrong directory');
  await note.locator('.note-edit').click();
  await note.locator('textarea').fill('the right directory after all');
  await note.locator('.save-note').click();
  await note.locator('.note-text', { hasText: 'the right directory after all' }).waitFor();
  await answer.locator('.thumb-up').click();
  await answer.locator('.thumb-up[aria-pressed="true"]').waitFor();
  assert.equal(await answer.locator('.thumb-down').getAttribute('aria-pressed'), 'false');

  // The trace page shows the note on its step and the rating.
  await go(page, `/t/${run.trace_id}`);
  await page
    .locator(`.step-note[data-note-for="${run.callId}"] .note-text`, { hasText: 'the right directory after all' })
    .waitFor();
  assert.equal(await page.locator('.trace-page .thumb-up').getAttribute('aria-pressed'), 'true');

  // Removed: the note, the comment, the thumb; nothing left after a reload nor on the server.
  await go(page, `/c/${run.conversation_id}`);
  await note.locator('.note-remove').click();
  await note.locator('.note-add').waitFor();
  await answer.locator('.remove-comment').click();
  await answer.locator('.feedback-text').waitFor({ state: 'detached' });
  await answer.locator('.thumb-up').click();
  await answer.locator('.thumb-up[aria-pressed="false"]').waitFor();
  await page.reload();
  await waitForHydration(page);
  assert.equal(await answer.locator('[aria-pressed="true"]').count(), 0);
  assert.equal(await answer.locator('.note-text').count(), 0);
  await note.locator('.note-add').waitFor();
  const read = await fetch(`${server.url}/api/conversations/${run.conversation_id}`).then((r) => r.json());
  assert.equal(read.feedback, undefined, JSON.stringify(read.feedback));
  assert.deepEqual(problems, []);
  await context.close();
});
