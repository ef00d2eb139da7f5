// `bpflog report` in a real browser: headless Debian Chromium (playwright-core, no bundled
// browser) loads reports of fixture logs from file:// and is clicked through.
//
// Run: `npm ci && npm test` here, after `cargo build` at the root (BPFLOG_BIN names another
// binary; CHROMIUM another browser). The screenshot lands in target/report-screenshot.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { inflateRawSync, deflateRawSync } from 'node:zlib';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launch } from './browser.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FIX = join(ROOT, 'tests/fixtures');
const OUT = join(ROOT, 'target/browser-tests');
const BIN = process.env.BPFLOG_BIN || join(ROOT, 'target/debug/bpflog');
const RH = 18;

/** Writes the report of fixture log `name` (`object.program.lN`) of the fixtures in `fix`
 * (`obj/`, `logs/`, `src/`) and returns its path. */
function report(name, fix = FIX) {
  const object = name.split('.').slice(0, -2).join('.');
  const out = join(OUT, name + '.html');
  execFileSync(BIN, [
    'report', join(fix, 'obj', object + '.o'), join(fix, 'logs', name + '.log'),
    '-o', out, '--source-dir', join(fix, 'src'),
  ]);
  return out;
}

let browser;
before(async () => {
  assert.ok(existsSync(BIN), `no bpflog binary at ${BIN}: run cargo build first`);
  mkdirSync(OUT, { recursive: true });
  browser = await launch();
});
after(async () => { if (browser) await browser.close(); });

/** Opens a report and waits for its first render. */
async function open(path) {
  const page = browser.page;
  browser.requests.length = 0;
  browser.errors.length = 0;
  await page.goto(pathToFileURL(path).href);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

/** Scrolls the log so that log line k is drawn, then clicks it (or the selector inside it). */
async function clickLogLine(page, k, inner = '') {
  await page.evaluate(({ k, RH }) => {
    const vp = document.querySelector('#log-viewport');
    vp.scrollTop = Math.max(0, k * RH - vp.clientHeight / 3);
    vp.dispatchEvent(new Event('scroll'));
  }, { k, RH });
  const sel = `#log-viewport .row[data-l="${k}"] ${inner}`.trim();
  await page.waitForSelector(sel);
  await page.click(sel);
}

const state = (page) => page.evaluate(() => window.bpflog.state());

test('instructions and source lines link both ways; jumps are followed; nothing is fetched', async () => {
  const path = report('reject_subprog.xdp_reject_subprog.l2');
  const page = await open(path);

  // The rejection is pinpointed at the top, and the failing instruction is selected.
  const diag = await page.textContent('#diag');
  assert.match(diag, /R1 invalid mem access 'map_value_or_null'/);
  assert.match(diag, /reject_subprog\.c:54:12/);
  assert.match(diag, /called from xdp_reject_subprog/);
  assert.equal((await state(page)).insn, 38);
  assert.equal(await page.locator('#log-viewport .row.err').count(), 1);

  // Click an instruction: its source line is highlighted in the source pane.
  const k16 = await page.evaluate(() => window.bpflog.lineOfInsn(16));
  await clickLogLine(page, k16);
  let s = await state(page);
  assert.equal(s.insn, 16);
  assert.equal(s.hlLine, 75);
  const hl = page.locator('#src-viewport .srow.hl');
  assert.equal(await hl.count(), 1);
  assert.equal(await hl.getAttribute('data-n'), '75');
  assert.match(await hl.textContent(), /len = bpf_ntohs\(iph->tot_len\);/);
  assert.match(await page.textContent('#detail'), /reject_subprog\.c:75:\d+ in xdp_reject_subprog/);
  assert.match(await page.textContent('#detail'), /R6\s*scalar/, 'the registers printed at it');

  // Click a source line: every instruction line of it is marked, and can be stepped through.
  await page.evaluate(() => { document.querySelector('#src-viewport').scrollTop = 30 * 18; });
  await page.waitForSelector('#src-viewport .srow[data-n="45"]');
  const visits = Number((await page.textContent('#src-viewport .srow[data-n="45"] .heat')).trim());
  assert.equal(visits, 5);
  await page.click('#src-viewport .srow[data-n="45"]');
  s = await state(page);
  assert.equal(s.hits.length, visits, 'one mark per visit');
  assert.equal(await page.textContent('#hit-pos'), `1 / ${visits}`);
  const insns = await page.evaluate((hits) => hits.map((k) => document.querySelector(`#log-viewport .row[data-l="${k}"] .ix`)?.textContent), s.hits);
  assert.deepEqual(insns, ['6: ', '7: ', '8: ', '9: ', '10: '], 'the instructions of line 45, all drawn as hits');
  assert.equal(await page.locator('#log-viewport .row.hit').count(), visits);
  await page.click('#hit-next');
  s = await state(page);
  assert.equal(s.hitPos, 1);
  assert.equal(s.sel, s.hits[1]);
  assert.equal(await page.getAttribute('#log-viewport .row.cur', 'data-l'), String(s.hits[1]));
  await page.click('#hit-prev');
  await page.click('#hit-prev');
  s = await state(page);
  assert.equal(s.hitPos, visits - 1, 'prev wraps around');
  await page.keyboard.press('n');
  assert.equal((await state(page)).hitPos, 0, 'n steps too');

  // A jump whose target the verifier never reached says so: `5: if r3 > r2 goto pc+28`.
  const k5 = await page.evaluate(() => window.bpflog.lineOfInsn(5));
  await clickLogLine(page, k5, 'a.jmp');
  assert.match(await page.textContent('#find-info'), /instruction 34 is not in the log/);

  // The call into the subprogram: `27: call pc+7` leads to instruction 35 of update_flow.
  const k27 = await page.evaluate(() => window.bpflog.lineOfInsn(27));
  await clickLogLine(page, k27, 'a.jmp');
  assert.equal((await state(page)).insn, 35);
  assert.match(await page.textContent('#detail'), /in update_flow/);

  await page.screenshot({ path: join(ROOT, 'target/report-screenshot.png') });
  assert.deepEqual(browser.requests, [pathToFileURL(path).href], 'no request but the page itself');
  assert.deepEqual(browser.errors, []);
});

test('paths: from X to Y is followed both ways; states fold away', async () => {
  const path = report('branchy.xdp_branchy.l2');
  const page = await open(path);
  assert.equal(await page.isHidden('#diag'), true, 'an accepted log has no diagnostic');
  const k = await page.evaluate(() => {
    const rows = window.bpflog.lines;
    for (let k = 0; k < rows; k++) if (/^from \d+ to \d+/.test(window.bpflog.text(k))) return k;
    return -1;
  });
  assert.ok(k > 0);
  const [, from, to] = (await page.evaluate((k) => window.bpflog.text(k), k)).match(/^from (\d+) to (\d+)/);
  await clickLogLine(page, k, 'a.jto');
  let s = await state(page);
  assert.equal(s.insn, Number(to));
  assert.ok(s.sel > k);
  await clickLogLine(page, k, 'a.jfrom');
  s = await state(page);
  assert.equal(s.insn, Number(from));
  assert.ok(s.sel < k);

  // `16: (05) goto pc+16` leads to instruction 33, further down.
  const k16 = await page.evaluate(() => window.bpflog.lineOfInsn(16));
  await clickLogLine(page, k16, 'a.jmp');
  s = await state(page);
  assert.equal(s.insn, 33);
  assert.ok(s.sel > k16);

  const all = (await state(page)).rows;
  await page.uncheck('#show-states');
  const folded = (await state(page)).rows;
  assert.ok(folded < all, `states hidden: ${folded} rows of ${all}`);
  assert.equal(await page.locator('#log-viewport .row .st').count(), 0);
  await page.check('#show-states');
  assert.equal((await state(page)).rows, all);
  assert.deepEqual(browser.requests, [pathToFileURL(path).href]);
  assert.deepEqual(browser.errors, []);
});

test('an inlined instruction shows its inline chain', async () => {
  const path = report('reject_nested.xdp_reject_nested.l2');
  const page = await open(path);
  const detail = await page.textContent('#detail');
  assert.match(detail, /inlined into parse_l3/);
  assert.match(detail, /inlined into xdp_reject_nested/);
  assert.ok(await page.locator('#src-viewport .srow.hl').count() === 1);
  assert.deepEqual(browser.requests, [pathToFileURL(path).href]);
  assert.deepEqual(browser.errors, []);
});

test('the state panel shows the frame the instruction runs in first, then its caller', async () => {
  const path = report('reject_subprog.xdp_reject_subprog.l2');
  const page = await open(path);
  // The page opens on the failing instruction, 38, in the subprogram update_flow: frame 1.
  const s = await state(page);
  assert.equal(s.insn, 38);
  assert.equal(s.frame, 1);
  const frames = await page.$$eval('#regs tr.frame', (rows) => rows.map((r) => r.dataset.frame));
  assert.deepEqual(frames, ['1', '0'], 'frame 1 first, then the caller');
  const regs = (frame) => page.$$eval(`#regs tr[data-frame="${frame}"]:not(.frame)`, (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
  const callee = await regs(1);
  assert.deepEqual(callee.map((r) => r[0]), ['R1', 'R2', 'R3', 'R10']);
  assert.equal(callee[0][1], 'map_value_or_null(id=2,map=flows,ks=8,vs=24)', 'the pointer the load dereferences');
  const caller = await regs(0);
  assert.deepEqual(caller.map((r) => r[0]), ['R6', 'R10', 'fp-8'], 'as the caller: state printed them');
  // Back in frame 0, before the call: frame 0 alone.
  const k26 = await page.evaluate(() => window.bpflog.lineOfInsn(26));
  await clickLogLine(page, k26);
  assert.equal((await state(page)).frame, 0);
  assert.deepEqual(await page.$$eval('#regs tr.frame', (rows) => rows.map((r) => r.dataset.frame)), ['0']);
  assert.deepEqual(browser.requests, [pathToFileURL(path).href]);
  assert.deepEqual(browser.errors, []);
});

test('the rejection is explained: each step of the chain leads to its log line and source line', async () => {
  // `explain`'s fixture: an index bounded one too loosely (`if (idx > 8)` for a row of 8).
  const path = report('reject_bound.xdp_reject_bound.l2', join(FIX, 'explain'));
  const page = await open(path);
  const X = await page.evaluate(() => JSON.parse(document.getElementById('bpflog-data').textContent).explain);
  const locs = await page.evaluate(() => JSON.parse(document.getElementById('bpflog-data').textContent).locs);
  assert.equal(X.class, 'map-value-out-of-range');
  const box = await page.textContent('#explain');
  assert.ok(box.includes(`class: ${X.title} [${X.class}]`), box);
  assert.ok(box.includes(`help: ${X.help}`), box);
  assert.ok(X.chain.length >= 3, 'origin, check and failure at least');
  const steps = page.locator('#explain a.step');
  assert.equal(await steps.count(), X.chain.length);
  // Each step as the page shows it: role, file:line:col, source text, instruction.
  for (const [n, s] of X.chain.entries()) {
    const shown = await steps.nth(n).textContent();
    assert.ok(shown.startsWith(s.role), shown);
    for (const part of [`${s.file}:${s.line}:${s.column}`, s.source, `[${s.instruction}]`]) assert.ok(shown.includes(part), `${shown} has ${part}`);
  }
  assert.deepEqual(X.chain.map((s) => s.role).slice(0, 2), ['origin', 'narrowed']);
  assert.equal(X.chain.at(-1).role, 'failed');
  // Each step's instruction line on the failing path is marked in the log.
  const marked = await page.$$eval('#log-viewport .row.step', (rows) => rows.map((r) => +r.dataset.l));
  assert.deepEqual(marked.sort((a, b) => a - b), X.steps.map(([row]) => row));

  // Clicking a step moves the log to its instruction's line and the source to its line, from
  // wherever they were.
  for (const n of [0, 1, X.chain.length - 1, 0]) {
    await page.evaluate(() => {
      for (const vp of document.querySelectorAll('#log-viewport, #src-viewport')) { vp.scrollTop = vp.scrollHeight; vp.dispatchEvent(new Event('scroll')); }
    });
    await page.click(`#explain a.step[data-step="${n}"]`);
    await page.waitForFunction((n) => window.bpflog.state().step === n, n);
    const s = await state(page);
    const [row, loc] = X.steps[n];
    assert.equal(s.sel, row, `step ${n}: its log line`);
    assert.equal(s.insn, X.chain[n].insn, `step ${n}: its instruction`);
    assert.ok((await page.evaluate((k) => window.bpflog.textOf(k), row)).startsWith(`${X.chain[n].insn}: `));
    assert.equal(s.file, locs[loc][0]);
    assert.equal(s.hlLine, X.chain[n].line, `step ${n}: its source line`);
    // Both drawn inside their panes.
    const inside = await page.evaluate(() => [['#log-viewport', '.row.sel'], ['#src-viewport', '.srow.hl']].map(([pane, row]) => {
      const vp = document.querySelector(pane).getBoundingClientRect();
      const r = document.querySelector(pane + ' ' + row)?.getBoundingClientRect();
      return !!r && r.top >= vp.top && r.bottom <= vp.bottom;
    }));
    assert.deepEqual(inside, [true, true], `step ${n}: shown in both panes`);
    assert.equal(await page.getAttribute('#src-viewport .srow.hl', 'data-n'), String(X.chain[n].line));
    assert.equal(await page.locator('#explain a.step.on').count(), 1);
    assert.equal(await page.getAttribute('#explain a.step.on', 'data-step'), String(n));
  }
  // The narrowing step's source line is its own (the test `if (idx > 8)`).
  assert.notEqual(X.chain[1].line, X.chain.at(-1).line);
  await page.screenshot({ path: join(ROOT, 'target/report-explain-screenshot.png') });
  assert.deepEqual(browser.requests, [pathToFileURL(path).href], 'no request but the page itself');
  assert.deepEqual(browser.errors, []);
});

test("a step shows its own source line where the kernel's line record says another", async () => {
  // reject_global: the origin, instruction 28, is at reject_global.c:35 (DWARF); the line record
  // covering it, which clicking the instruction shows, is line 34.
  const path = report('reject_global.xdp_reject_global.l2');
  const page = await open(path);
  const X = await page.evaluate(() => JSON.parse(document.getElementById('bpflog-data').textContent).explain);
  assert.equal(X.chain[0].insn, 28);
  assert.equal(X.chain[0].line, 35);
  await clickLogLine(page, X.steps[0][0]);
  assert.equal((await state(page)).hlLine, 34, "the instruction's line record");
  await page.click('#explain a.step[data-step="0"]');
  await page.waitForFunction(() => window.bpflog.state().step === 0);
  const s = await state(page);
  assert.equal(s.sel, X.steps[0][0]);
  assert.equal(s.hlLine, 35, "the step's own line");
  assert.deepEqual(browser.requests, [pathToFileURL(path).href]);
  assert.deepEqual(browser.errors, []);
});

test("the page draws and follows what Rust decoded of a row, not the row's text", async () => {
  // The rows' text altered in the page's pieces, their decoded fields kept: a page that read the
  // text again would link and select by the altered text.
  const path = report('branchy.xdp_branchy.l2');
  const found = {};
  const alter = (text) => {
    // `16: (05) goto pc+16` (to 33): its opcode and offset as no instruction prints them.
    if (found.jump === undefined && text === '16: (05) goto pc+16') return ['jump', '16: [05] goto pc+10'];
    // `from 59 to 61: ...` (the branch at 59, on at 61).
    if (found.path === undefined && text.startsWith('from 59 to 61: ')) return ['path', 'from 12 to 34: ' + text.slice(15)];
    // The liveness row of instruction 16.
    if (found.live === undefined && /^ +16: [0-9.]+ \(05\) goto pc\+16$/.test(text)) return ['live', text.replace('16:', '17:')];
    return null;
  };
  const html = readFileSync(path, 'latin1').replace(
    /(<script type="application\/deflate" class="bpflog-log" data-first="(\d+)" data-rows="\d+">)([^<]*)(<\/script>)/g,
    (all, open, first, b64, close) => {
      const rows = JSON.parse(inflateRawSync(Buffer.from(b64, 'base64')).toString('utf8'));
      rows.forEach((row, n) => {
        const text = typeof row === 'string' ? row : row[0];
        const altered = alter(text);
        if (!altered) return;
        assert.ok(typeof row !== 'string', `${text}: a row with fields`);
        found[altered[0]] = +first + n;
        row[0] = altered[1];
      });
      return open + deflateRawSync(Buffer.from(JSON.stringify(rows), 'utf8')).toString('base64') + close;
    });
  assert.deepEqual(Object.keys(found).sort(), ['jump', 'live', 'path'], 'every row to alter is there');
  const altered = join(OUT, 'altered-rows.html');
  writeFileSync(altered, html, 'latin1');
  const page = await open(altered);

  // The jump: its parts drawn as the fields cut them, followed to instruction 33.
  await clickLogLine(page, found.jump);
  const row = `#log-viewport .row[data-l="${found.jump}"]`;
  assert.equal(await page.textContent(`${row} .ix`), '16: ');
  assert.equal(await page.textContent(`${row} .op`), '[05] ');
  assert.equal(await page.textContent(`${row} a.jmp`), 'goto pc+10');
  await clickLogLine(page, found.jump, 'a.jmp');
  let s = await state(page);
  assert.equal(s.insn, 33, 'the decoded target, not the text\'s');
  assert.ok(s.sel > found.jump);

  // The path: on at 61, back to the branch at 59.
  await clickLogLine(page, found.path, 'a.jto');
  s = await state(page);
  assert.equal(s.insn, 61);
  assert.ok(s.sel > found.path);
  await clickLogLine(page, found.path, 'a.jfrom');
  s = await state(page);
  assert.equal(s.insn, 59);
  assert.ok(s.sel < found.path);

  // The liveness row stands for its decoded instruction, 16.
  await clickLogLine(page, found.live);
  assert.match(await page.textContent('#detail h3'), / · instruction 16$/);
  assert.deepEqual(browser.requests, [pathToFileURL(altered).href]);
  assert.deepEqual(browser.errors, []);
});
