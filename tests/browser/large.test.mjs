// The report at the kernel's scale: a level-2 log past 600 MB (the verifier allows about 1 GB),
// made by repeating a real fixture log, opened in headless Chromium. The page holds the log as
// compressed pieces inflated on demand: it must be a fraction of the log's size, show its first rows
// within seconds, and reach its last rows.
//
// Run with the others (`npm test` here, after `cargo build` at the root). Writing the log and
// the page takes most of the time (with a debug build, minutes); the page is opened once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, writeSync, closeSync, readFileSync, statSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launch } from './browser.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FIX = join(ROOT, 'tests/fixtures');
const BIN = process.env.BPFLOG_BIN || join(ROOT, 'target/debug/bpflog');
const TARGET = 620 * 1000 * 1000; // bytes of log: past 600 MB
const RH = 18;

test('a log past 600 MB: the page is a fraction of it, its first rows show within seconds', async () => {
  assert.ok(existsSync(BIN), `no bpflog binary at ${BIN}: run cargo build first`);
  const dir = mkdtempSync(join(tmpdir(), 'bpflog-large-'));
  const browser = await launch();
  try {
    // branchy.o's real level-2 log, over and over, as if the program were verified again and
    // again: every copy is a whole log of the program.
    const seed = readFileSync(join(FIX, 'logs/branchy.xdp_branchy.l2.log'));
    const seedLines = seed.toString('latin1').split('\n');
    if (seedLines[seedLines.length - 1] === '') seedLines.pop();
    const copies = Math.ceil(TARGET / seed.length);
    const log = join(dir, 'big.log');
    const fd = openSync(log, 'w');
    const block = Buffer.concat(Array(16).fill(seed));
    let written = 0;
    for (let n = 0; n < copies; n += 16) written += writeSync(fd, n + 16 <= copies ? block : Buffer.concat(Array(copies - n).fill(seed)));
    closeSync(fd);
    assert.equal(written, copies * seed.length);
    assert.ok(written > 600e6, `${written} bytes`);

    const html = join(dir, 'big.html');
    let t = performance.now();
    execFileSync(BIN, [
      'report', join(FIX, 'obj/branchy.o'), log, '-o', html, '--source-dir', join(FIX, 'src'),
    ]);
    const built = performance.now() - t;
    const pageBytes = statSync(html).size;
    rmSync(log);
    console.log(`# log ${written} bytes (${copies} copies), page ${pageBytes} bytes (${(pageBytes / written).toFixed(3)}x), written in ${(built / 1000).toFixed(1)} s`);
    assert.ok(pageBytes * 4 < written, `the page (${pageBytes} bytes) is under a quarter of the log`);

    const page = browser.page;
    t = performance.now();
    await page.goto(pathToFileURL(html).href, { timeout: 120000 });
    await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
    const shown = performance.now() - t;
    const ready = await page.evaluate(() => window.bpflogReady);
    console.log(`# first rows after ${(shown / 1000).toFixed(2)} s (page's own count from navigation start: ${(ready / 1000).toFixed(2)} s)`);
    assert.ok(shown < 30000, `first rows after ${shown} ms`);

    // The first rows are drawn, with the log's text.
    const lines = await page.evaluate(() => window.bpflog.lines);
    assert.equal(lines, copies * seedLines.length);
    const first = await page.$eval('#log-viewport .row[data-l="0"]', (r) => r.textContent);
    assert.equal(first, '1' + seedLines[0]);
    const s = await page.evaluate(() => window.bpflog.state());
    assert.ok(s.pieces > 1000, `${s.pieces} pieces`);
    assert.ok(s.inflated <= 2, `${s.inflated} pieces inflated to open the page`);

    // The last rows: scrolled to the end, the pieces there are inflated and drawn.
    await page.evaluate(() => {
      const vp = document.querySelector('#log-viewport');
      vp.scrollTop = vp.scrollHeight;
      vp.dispatchEvent(new Event('scroll'));
    });
    const last = lines - 1;
    await page.waitForSelector(`#log-viewport .row[data-l="${last}"]:not(.pending)`, { timeout: 30000 });
    assert.equal(await page.$eval(`#log-viewport .row[data-l="${last}"]`, (r) => r.textContent), String(lines) + seedLines[seedLines.length - 1]);
    assert.equal(await page.evaluate((k) => window.bpflog.textOf(k), last - seedLines.length), seedLines[seedLines.length - 1]);

    // Find walks the pieces: from the last line it wraps around to the first copy's summary,
    // and from the second copy's on to the third's, in the next piece (4,096 rows a piece).
    const summary = seedLines[seedLines.length - 1];
    const findFrom = async (k, q) => {
      await page.evaluate((k) => { window.bpflog.select(k); document.querySelector('#find-info').textContent = ''; }, k);
      await page.fill('#find', q);
      await page.press('#find', 'Enter');
      await page.waitForFunction(() => /^(line \d+|not found)$/.test(document.querySelector('#find-info').textContent), null, { timeout: 30000 });
      return page.textContent('#find-info');
    };
    assert.equal(await findFrom(last, summary.slice(0, 24)), `line ${seedLines.length}`);
    assert.equal(await findFrom(2 * seedLines.length - 1, summary.slice(0, 24)), `line ${3 * seedLines.length}`);
    assert.equal((await page.evaluate(() => window.bpflog.state())).sel, 3 * seedLines.length - 1);

    // An instruction deep in the log: selected, its source line shown, its registers decoded.
    const k = await page.evaluate((from) => window.bpflog.lineOfInsn(16, from), last - seedLines.length);
    assert.ok(k > last - seedLines.length);
    await page.evaluate((k) => window.bpflog.select(k), k);
    await page.waitForFunction(() => document.querySelector('#regs'), null, { timeout: 30000 });
    assert.equal((await page.evaluate(() => window.bpflog.state())).insn, 16);
    assert.ok((await page.evaluate(() => window.bpflog.state())).inflated <= 32, 'pieces are forgotten');
    assert.deepEqual(browser.requests, [pathToFileURL(html).href], 'no request but the page itself');
    assert.deepEqual(browser.errors, []);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
