// Headless Debian Chromium through playwright-core (no browser download): a fresh profile, no
// background traffic, and a record of every request the page makes.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Launches Chromium with a fresh user data dir; returns { context, page, requests, close }. */
export async function launch({ width = 1600, height = 1000 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'bpflog-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width, height },
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  const requests = [];
  context.on('request', (r) => requests.push(r.url()));
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return {
    context, page, requests, errors,
    close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}
