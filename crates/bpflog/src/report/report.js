// bpflog report: the annotated verifier log and the source, linked. No network, no libraries.
//
// The log is in pieces (script.bpflog-log: raw deflate, as base64, see crates/bpflog/src/report/chunks.rs),
// inflated by the browser's DecompressionStream when a row of theirs is wanted: no string holds
// the whole log, which may be as large as the kernel allows (about 1 GB). Each row carries the
// frame the verifier is in and what Rust decoded of the line: the parts of its text and the
// instructions it links to (`Fields` in crates/bpflog/src/report/mod.rs), the register state it
// prints. The page reads the text only to show it. #bpflog-data holds the metadata (see
// crates/bpflog/src/report/mod.rs). Only the rows on screen are in the DOM.
(async function () {
  'use strict';
  const t0 = performance.now();
  const D = JSON.parse(document.getElementById('bpflog-data').textContent);
  const RH = 18; // row height in px: --row in the CSS
  const MAXH = 8000000; // taller scroll areas are scaled (browsers cap element heights)
  const $ = (s) => document.querySelector(s);
  const esc = (s) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

  // ---- the log's pieces, inflated on demand; the most recently used are kept ----
  const N = D.line_count;
  const PIECES = Array.from(document.querySelectorAll('script.bpflog-log'));
  const pieceFirst = PIECES.map((p) => +p.dataset.first);
  const KEEP = 32; // inflated pieces kept (each at most 4096 rows or 1 MiB of JSON)
  const cache = new Map(); // piece -> rows, least recently used first
  const loading = new Map(); // piece -> promise of its rows
  function pieceOf(k) {
    let lo = 0, hi = PIECES.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (pieceFirst[mid] <= k) lo = mid; else hi = mid - 1; }
    return lo;
  }
  async function inflate(b64) {
    const bytes = Uint8Array.fromBase64 ? Uint8Array.fromBase64(b64) : Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
    return JSON.parse(await new Response(stream).text());
  }
  function load(c) {
    if (cache.has(c)) {
      const rows = cache.get(c);
      cache.delete(c); cache.set(c, rows); // most recently used
      return Promise.resolve(rows);
    }
    let p = loading.get(c);
    if (!p) {
      p = inflate(PIECES[c].textContent).catch((e) => {
        // A piece that cannot be inflated shows as such, once: it is not asked for again.
        console.warn('bpflog: piece ' + c + ': ' + e);
        const rows = [];
        for (let k = pieceFirst[c]; k < (c + 1 < PIECES.length ? pieceFirst[c + 1] : N); k++) rows.push('(this part of the log could not be read)');
        return rows;
      }).then((rows) => {
        loading.delete(c);
        cache.set(c, rows);
        while (cache.size > KEEP) cache.delete(cache.keys().next().value);
        scheduleRefresh();
        return rows;
      });
      loading.set(c, p);
    }
    return p;
  }
  // The row of log line k if its piece is inflated (asked for otherwise): its text, or
  // [text, frame], [text, frame, fields] or [text, frame, fields or 0, full, [[frame, name,
  // value, order], ...]].
  function rowAt(k) {
    if (!PIECES.length) return undefined;
    const c = pieceOf(k);
    const rows = cache.get(c);
    if (rows === undefined) { load(c); return undefined; }
    return rows[k - pieceFirst[c]];
  }
  const text = (k) => { const r = rowAt(k); return r === undefined || typeof r === 'string' ? r : r[0]; };
  const frameAt = (k) => { const r = rowAt(k); return r === undefined ? -1 : typeof r === 'string' ? 0 : r[1]; };
  // The row's fields (null: none, or its piece is not inflated).
  const fieldsAt = (k) => { const r = rowAt(k); return r === undefined || typeof r === 'string' ? null : r[2] || null; };
  let refreshPending = false;
  function scheduleRefresh() {
    if (refreshPending) return;
    refreshPending = true;
    requestAnimationFrame(() => {
      refreshPending = false;
      logList.render();
      if (S.detailWaits) detail(...S.detailWaits);
    });
  }
  const K = D.kinds;
  const insn = new Int32Array(N).fill(-1);
  {
    let prev = -1, jp = 0;
    for (let k = 0; k < N; k++) {
      const c = K.charCodeAt(k);
      if (c === 105) insn[k] = ++prev; // 'i'
      else if (c === 106) { prev = D.jumps[jp++]; insn[k] = prev; } // 'j'
    }
  }
  const isInsn = (k) => insn[k] >= 0;
  const srcOfInsn = (i) => (i >= 0 && i < D.insn_src.length ? D.insn_src[i] : -1);
  const locOfInsn = (i) => (i >= 0 && i < D.insn_loc.length ? D.insn_loc[i] : -1);
  const errorLines = new Set(D.diag ? D.diag.errors.map((e) => e[0]) : []);
  // The failing instruction's line: the last instruction line before the first error.
  let failLine = -1;
  if (D.diag && D.diag.errors.length) {
    for (let k = D.diag.errors[0][0]; k >= 0; k--) if (isInsn(k)) { failLine = k; break; }
  }
  // The explanation's chain: the log line of each step's instruction on the failing path.
  const X = D.explain;
  const stepLine = X ? X.steps.map(([row]) => row) : [];
  const stepLines = new Set(stepLine.filter((k) => k >= 0));

  // ---- source lines ----
  const totalVisits = D.totals.insn_lines || 0;
  const srcKey = new Map(); // "file:line" -> src id
  D.src.forEach((s, id) => srcKey.set(s[0] + ':' + s[1], id));
  let maxVisits = 1;
  for (const s of D.src) if (s[2] > maxVisits) maxVisits = s[2];

  // ---- a virtual list: only rows on screen are drawn ----
  function VList(vp, draw) {
    this.vp = vp; this.draw = draw; this.n = 0;
    this.spacer = vp.querySelector('.spacer-y'); this.rows = vp.querySelector('.rows');
    this.pending = false;
    vp.addEventListener('scroll', () => this.schedule());
    window.addEventListener('resize', () => this.schedule());
  }
  VList.prototype.setCount = function (n) {
    this.n = n;
    const h = n * RH;
    this.scale = h > MAXH ? (h - this.vp.clientHeight) / (MAXH - this.vp.clientHeight) : 1;
    this.spacer.style.height = Math.min(h, MAXH) + 'px';
    this.render();
  };
  VList.prototype.schedule = function () {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  };
  VList.prototype.first = function () {
    return Math.floor((this.vp.scrollTop * this.scale) / RH);
  };
  VList.prototype.render = function () {
    const top = this.vp.scrollTop, v = top * this.scale;
    const first = Math.max(0, Math.floor(v / RH));
    const count = Math.ceil(this.vp.clientHeight / RH) + 2;
    const off = top - (v - first * RH);
    let html = '';
    for (let r = first; r < Math.min(this.n, first + count); r++) {
      html += this.draw(r, off + (r - first) * RH);
    }
    this.rows.innerHTML = html;
  };
  VList.prototype.reveal = function (r, center) {
    const h = this.vp.clientHeight, v = this.vp.scrollTop * this.scale;
    const y = r * RH;
    if (!center && y >= v && y + RH <= v + h) return;
    this.vp.scrollTop = Math.max(0, (y - h / 2 + RH / 2) / this.scale);
    this.render();
  };

  // ---- state ----
  const S = {
    sel: -1, // selected log line
    step: -1, // the step of the explanation's chain last followed
    showStates: true,
    view: null, // Uint32Array: log line of each row
    rowOf: null, // Int32Array: row of each log line (-1: hidden)
    hits: null, // Int32Array of log lines: instructions of the picked source line
    hitMark: null, // Uint8Array per log line
    hitPos: -1,
    picked: -1, // picked source line id
    file: -1, // file shown in the source pane
    srcRows: [], // [line number, text, src id | -1] per source row
    hlLine: -1, // highlighted source line number (in S.file)
    chainLines: new Set(), // call-site lines of the inline chain (in S.file)
    findAt: -1,
  };

  function isStateLine(k) {
    const c = K[k];
    return c === 's' || c === 'c' || c === 'n';
  }

  function buildView() {
    if (S.showStates) {
      S.view = null; S.rowOf = null;
      logList.setCount(N);
      return;
    }
    const view = new Uint32Array(N), rowOf = new Int32Array(N).fill(-1);
    let n = 0;
    for (let k = 0; k < N; k++) if (!isStateLine(k)) { rowOf[k] = n; view[n++] = k; }
    S.view = view.subarray(0, n); S.rowOf = rowOf;
    logList.setCount(n);
  }
  const lineOfRow = (r) => (S.view ? S.view[r] : r);
  const rowOfLine = (k) => {
    if (!S.rowOf) return k;
    for (let j = k; j < N; j++) if (S.rowOf[j] >= 0) return S.rowOf[j];
    for (let j = k; j >= 0; j--) if (S.rowOf[j] >= 0) return S.rowOf[j];
    return 0;
  };

  // ---- drawing log rows ----
  // The text after the decoded parts: the state the line prints, or a mark where it is hidden.
  function drawState(t, at, mark) {
    if (at >= t.length) return '';
    return S.showStates ? '<span class="st">' + esc(t.slice(at)) + '</span>' : '<span class="more" title="register state hidden">' + mark + '…</span>';
  }
  // An instruction line: [op, code, end] or [op, code, end, at, target] (a jump's operation
  // from `at`, to instruction `target`).
  function drawInsn(t, f) {
    if (!f) return esc(t);
    const [op, code, end, at, target] = f;
    let out = '<span class="ix">' + esc(t.slice(0, op)) + '</span>' + (code > op ? '<span class="op">' + esc(t.slice(op, code)) + '</span>' : '');
    if (f.length > 3) {
      out += esc(t.slice(code, at)) + '<a class="jmp" data-to="' + target + '" title="go to instruction ' + target + '">' + esc(t.slice(at, end)) + '</a>';
    } else out += esc(t.slice(code, end));
    return out + drawState(t, end, ';');
  }
  // `from X to Y`: [from_at, from_end, to_at, to_end, X, Y].
  function drawFromTo(t, f) {
    if (!f) return esc(t);
    const [fa, fe, ta, te, from, to] = f;
    return esc(t.slice(0, fa)) + '<a class="jfrom" data-from="' + from + '" title="the branch at instruction ' + from + '">' + esc(t.slice(fa, fe)) + '</a>' + esc(t.slice(fe, ta))
      + '<a class="jto" data-to="' + to + '" title="where this path continues">' + esc(t.slice(ta, te)) + '</a>' + drawState(t, te, ':');
  }
  function drawLogRow(r, top) {
    const k = lineOfRow(r);
    const t = text(k);
    const c = K[k];
    if (t === undefined) return '<div class="row pending" data-l="' + k + '" style="top:' + top + 'px"><span class="ln">' + (k + 1) + '</span>…</div>';
    let cls = 'row k-' + c;
    if (c === 'n') cls += ' ind';
    if (errorLines.has(k)) cls += ' err';
    if (k === failLine) cls += ' fail';
    if (stepLines.has(k)) cls += ' step';
    if (S.hitMark && S.hitMark[k]) cls += S.hits[S.hitPos] === k ? ' cur hit' : ' hit';
    if (k === S.sel) cls += ' sel';
    let body;
    if (c === 'i' || c === 'j') body = drawInsn(t, fieldsAt(k));
    else if (c === 'f') body = drawFromTo(t, fieldsAt(k));
    else body = esc(t);
    return '<div class="' + cls + '" data-l="' + k + '" style="top:' + top + 'px"><span class="ln">' + (k + 1) + '</span>' + body + '</div>';
  }
  const logList = new VList($('#log-viewport'), drawLogRow);

  // ---- the source pane ----
  const fileSel = $('#file-select');
  const fileOrder = D.files.map((f, id) => id).sort((a, b) => D.files[b].visits - D.files[a].visits || (D.files[a].name < D.files[b].name ? -1 : 1));
  for (const id of fileOrder) {
    const f = D.files[id];
    const o = document.createElement('option');
    o.value = id;
    o.textContent = f.name + '  (' + f.visits + ' visits' + (f.found ? '' : ', not found: lines from BTF') + (f.text === null && f.found ? ', excerpt' : '') + ')';
    fileSel.appendChild(o);
  }
  fileSel.addEventListener('change', () => showFile(+fileSel.value));

  function showFile(id) {
    if (id === S.file) return;
    S.file = id;
    fileSel.value = String(id);
    const f = D.files[id];
    const rows = [];
    const sid = (n) => { const v = srcKey.get(id + ':' + n); return v === undefined ? -1 : v; };
    if (f.text !== null) {
      f.text.split('\n').forEach((t, k) => rows.push([k + 1, t, sid(k + 1)]));
    } else {
      let last = 0;
      for (const [n, t] of f.excerpt) {
        if (last && n > last + 1) rows.push([0, '⋯', -1]);
        rows.push([n, t, sid(n)]);
        last = n;
      }
    }
    S.srcRows = rows;
    $('#file-note').textContent = f.found ? (f.text === null ? 'excerpt: the file is large' : '') : 'file not found (--source-dir, --source-map): lines as BTF stores them';
    srcList.setCount(rows.length);
  }
  function heatClass(v) {
    if (!v || !totalVisits) return '';
    const pm = (v * 1000) / totalVisits;
    return pm >= 50 ? ' hot' : pm >= 5 ? ' warm' : '';
  }
  function drawSrcRow(r, top) {
    const [n, t, id] = S.srcRows[r];
    if (n === 0) return '<div class="srow gap" style="top:' + top + 'px"><span class="heat"></span><span class="n"></span><span class="t">' + esc(t) + '</span></div>';
    let cls = 'srow';
    let heat = '';
    if (id >= 0) {
      const v = D.src[id][2];
      cls += ' code' + heatClass(v);
      heat = '<span class="bar" style="width:' + Math.max(v ? 4 : 0, Math.round((v / maxVisits) * 100)) + '%"></span>' + (v ? v : '');
    }
    if (n === S.hlLine) cls += ' hl';
    if (S.chainLines.has(n)) cls += ' chain';
    if (id >= 0 && id === S.picked) cls += ' picked';
    const title = id >= 0 ? ' title="' + D.src[id][2] + ' visits, ' + D.src[id][3] + ' instructions, ' + D.src[id][4] + ' paths"' : '';
    return '<div class="' + cls + '" data-n="' + n + '" data-s="' + id + '" style="top:' + top + 'px"' + title + '><span class="heat">' + heat + '</span><span class="n">' + n + '</span><span class="t">' + esc(t) + '</span></div>';
  }
  const srcList = new VList($('#src-viewport'), drawSrcRow);
  function showSourceLine(fileId, line, chainLines) {
    if (fileId < 0) return;
    showFile(fileId);
    S.hlLine = line;
    S.chainLines = chainLines || new Set();
    const r = S.srcRows.findIndex((row) => row[0] === line);
    if (r >= 0) srcList.reveal(r, false);
    srcList.render();
  }

  // ---- selection ----
  function select(k, opts) {
    if (k < 0 || k >= N) return;
    // An annotation line stands for the instruction after it.
    if (K[k] === 'a') for (let j = k + 1; j < Math.min(N, k + 64); j++) if (isInsn(j)) { k = j; break; }
    S.sel = k;
    S.detailWaits = null;
    logList.reveal(rowOfLine(k), opts && opts.center);
    logList.render();
    if (text(k) === undefined) {
      // Its piece is being inflated: selected again once it is.
      load(pieceOf(k)).then(() => { if (S.sel === k) select(k); });
      return;
    }
    let i = insn[k];
    // A liveness row: its instruction; `from X to Y`: Y.
    const f = fieldsAt(k);
    if (i < 0 && K[k] === 'l' && f) i = f[0];
    if (i < 0 && K[k] === 'f' && f) i = f[5];
    const sid = srcOfInsn(i);
    const loc = locOfInsn(i);
    if (sid >= 0) {
      const chain = new Set();
      if (loc >= 0) for (const c of D.locs[loc][4]) if (c[1] === D.src[sid][0]) chain.add(c[2]);
      showSourceLine(D.src[sid][0], D.src[sid][1], chain);
    } else if (loc >= 0) {
      showSourceLine(D.locs[loc][0], D.locs[loc][1]);
    }
    detail(k, i, sid, loc);
  }

  function locText(fileId, line, col) {
    const f = fileId >= 0 ? D.files[fileId].name : '?';
    return f + ':' + line + (col ? ':' + col : '');
  }
  function srcLink(fileId, line, col) {
    return '<a class="srclink" data-f="' + fileId + '" data-n="' + line + '">' + esc(locText(fileId, line, col)) + '</a>';
  }

  // Registers as printed up to line k, from the decoded states of the rows: for the frame the
  // verifier is in at k and each of its callers, the latest print of each register back to that
  // frame's last full state (a `N: R1=...`, `from X to Y:` or `caller:` state), within the
  // path (a `from X to Y:` line starts one) and the pass. The current frame comes first. null
  // while a piece it needs is being inflated.
  function registersAt(k) {
    const cur = frameAt(k);
    if (cur < 0) return null;
    const frames = [];
    for (let f = cur; f >= 0; f--) frames.push({ frame: f, regs: new Map(), full: -1 });
    const of = (f) => (f <= cur ? frames[cur - f] : null);
    let open = frames.length;
    for (let j = k, steps = 0; j >= 0 && steps < 20000 && open > 0; j--, steps++) {
      if (K[j] === 'v' && j !== k) break;
      const r = rowAt(j);
      if (r === undefined) return null;
      if (typeof r !== 'string' && r.length > 3) {
        for (const [f, name, value, order] of r[4]) {
          const fr = of(f);
          if (fr && fr.full < 0 && !fr.regs.has(name)) fr.regs.set(name, [value, j, order]);
        }
        if (r[3]) {
          for (const [f] of r[4]) { const fr = of(f); if (fr && fr.full < 0) { fr.full = j; open--; } }
        }
      }
      if (K[j] === 'f') break;
    }
    return frames;
  }

  function detail(k, i, sid, loc) {
    const el = $('#detail');
    let h = '';
    h += '<h3>Log line ' + (k + 1) + (i >= 0 ? ' · instruction ' + i : '') + '</h3><div class="mono">' + esc(text(k)).slice(0, 400) + '</div>';
    if (loc >= 0) {
      const [f, line, col, fn, chain] = D.locs[loc];
      h += '<h3>Source</h3><div class="mono">' + srcLink(f, line, col) + ' in <b>' + esc(fn) + '</b></div>';
      if (chain.length) {
        h += '<ul class="chain">';
        for (const [caller, cf, cl, cc] of chain) {
          h += '<li>inlined into <b>' + esc(caller) + '</b>' + (cf >= 0 ? ' at ' + srcLink(cf, cl, cc) : '') + '</li>';
        }
        h += '</ul>';
      }
    } else if (sid >= 0) {
      h += '<h3>Source</h3><div class="mono">' + srcLink(D.src[sid][0], D.src[sid][1], 0) + '</div>';
    }
    if (sid >= 0) {
      const s = D.src[sid];
      h += '<div class="muted">this source line: ' + s[2] + ' visits, ' + s[3] + ' instructions, ' + s[4] + ' paths · <a class="pick" data-s="' + sid + '">find its instructions in the log</a></div>';
    }
    const frames = registersAt(k);
    S.detailWaits = frames ? null : [k, i, sid, loc];
    if (!frames) h += '<h3>Registers as printed</h3><p class="muted">reading the log…</p>';
    else if (frames.some((f) => f.regs.size)) {
      h += '<h3>Registers as printed</h3><table id="regs">';
      frames.forEach(({ frame, regs, full }, n) => {
        if (!regs.size) return;
        const names = [...regs.keys()].sort((a, b) => regs.get(a)[2] - regs.get(b)[2] || (a < b ? -1 : 1));
        h += '<tr class="frame" data-frame="' + frame + '"><th colspan="3">frame ' + frame + (n ? ' (a caller)' : ' (this instruction runs here)') + (full >= 0 ? ': full state at line <a class="goline" data-l="' + full + '">' + (full + 1) + '</a>, then changes' : '') + '</th></tr>';
        for (const name of names) {
          const [v, at] = regs.get(name);
          h += '<tr data-frame="' + frame + '"><td class="r">' + esc(name) + '</td><td>' + esc(v) + '</td><td class="at"><a class="goline" data-l="' + at + '">line ' + (at + 1) + '</a></td></tr>';
        }
      });
      h += '</table>';
    }
    el.innerHTML = h;
  }

  // ---- a source line's instructions in the log ----
  function pick(sid, fromLine) {
    S.picked = sid;
    const list = [];
    for (let k = 0; k < N; k++) { const i = insn[k]; if (i >= 0 && srcOfInsn(i) === sid) list.push(k); }
    S.hits = Int32Array.from(list);
    S.hitMark = new Uint8Array(N);
    for (const k of list) S.hitMark[k] = 1;
    const s = D.src[sid];
    $('#hit-nav').hidden = false;
    $('#hit-what').textContent = D.files[s[0]].name.split('/').pop() + ':' + s[1] + ':';
    let pos = 0;
    const after = fromLine === undefined ? S.sel : fromLine;
    while (pos < list.length && list[pos] < after) pos++;
    if (pos >= list.length) pos = 0;
    S.hitPos = list.length ? pos : -1;
    updateHits(true);
    srcList.render();
  }
  function updateHits(go) {
    const n = S.hits ? S.hits.length : 0;
    $('#hit-pos').textContent = n ? (S.hitPos + 1) + ' / ' + n : 'no instruction lines';
    if (go && n) select(S.hits[S.hitPos], { center: true });
    else logList.render();
  }
  function stepHit(d) {
    if (!S.hits || !S.hits.length) return;
    S.hitPos = (S.hitPos + d + S.hits.length) % S.hits.length;
    updateHits(true);
  }
  function clearHits() {
    S.hits = null; S.hitMark = null; S.hitPos = -1; S.picked = -1;
    $('#hit-nav').hidden = true;
    logList.render(); srcList.render();
  }

  // ---- following jumps ----
  function nextInsn(target, from) {
    for (let k = from + 1; k < N; k++) if (insn[k] === target) return k;
    for (let k = 0; k <= from && k < N; k++) if (insn[k] === target) return k;
    return -1;
  }
  function prevInsn(target, from) {
    for (let k = from - 1; k >= 0; k--) if (insn[k] === target) return k;
    return -1;
  }

  // ---- events ----
  $('#log-viewport').addEventListener('click', (e) => {
    const row = e.target.closest('.row');
    if (!row) return;
    const k = +row.dataset.l;
    const a = e.target.closest('a');
    const follow = (j, i) => {
      $('#find-info').textContent = j >= 0 ? '' : 'instruction ' + i + ' is not in the log (the verifier never went there)';
      if (j >= 0) select(j, { center: true });
    };
    if (a && a.classList.contains('jmp')) return follow(nextInsn(+a.dataset.to, k), +a.dataset.to);
    if (a && a.classList.contains('jfrom')) return follow(prevInsn(+a.dataset.from, k), +a.dataset.from);
    if (a && a.classList.contains('jto')) return follow(nextInsn(+a.dataset.to, k), +a.dataset.to);
    select(k);
  });
  $('#src-viewport').addEventListener('click', (e) => {
    const row = e.target.closest('.srow');
    if (!row) return;
    const sid = +row.dataset.s;
    S.hlLine = +row.dataset.n;
    if (sid >= 0) pick(sid); else srcList.render();
  });
  document.addEventListener('click', (e) => {
    const a = e.target.closest('a');
    if (!a) return;
    if (a.classList.contains('srclink')) showSourceLine(+a.dataset.f, +a.dataset.n);
    else if (a.classList.contains('goline')) select(+a.dataset.l, { center: true });
    else if (a.classList.contains('pick')) pick(+a.dataset.s);
    else if (a.classList.contains('step')) goStep(+a.dataset.step);
  });
  // A step of the explanation's chain: its instruction's line in the log (the failing path's),
  // and its source line (the step's own location, which may differ from the line record's).
  async function goStep(n) {
    const k = stepLine[n] >= 0 ? stepLine[n] : prevInsn(X.chain[n].insn, failLine + 1);
    if (k < 0) return;
    S.step = n;
    for (const a of document.querySelectorAll('#explain a.step')) a.classList.toggle('on', +a.dataset.step === n);
    await load(pieceOf(k));
    select(k, { center: true });
    const loc = X.steps[n][1];
    if (loc >= 0) showSourceLine(D.locs[loc][0], D.locs[loc][1]);
  }
  $('#hit-next').addEventListener('click', () => stepHit(1));
  $('#hit-prev').addEventListener('click', () => stepHit(-1));
  $('#hit-clear').addEventListener('click', clearHits);
  $('#show-states').addEventListener('change', (e) => {
    S.showStates = e.target.checked;
    buildView();
    if (S.sel >= 0) logList.reveal(rowOfLine(S.sel), true);
  });
  // Finding text: the lines after the selection, then from the top, piece by piece.
  let findRun = 0;
  async function find(q) {
    const run = ++findRun;
    const info = $('#find-info');
    const start = S.sel >= 0 ? Math.min(N, S.sel + 1) : 0;
    for (let n = 0, k = start; n < N; ) {
      if (k >= N) k = 0;
      const c = pieceOf(k);
      const first = pieceFirst[c];
      if (!cache.has(c)) info.textContent = 'finding… line ' + (k + 1);
      const rows = await load(c);
      if (run !== findRun) return;
      for (let j = k - first; j < rows.length && n < N; j++, n++, k++) {
        const r = rows[j];
        if ((typeof r === 'string' ? r : r[0]).includes(q)) {
          info.textContent = 'line ' + (k + 1);
          select(k, { center: true });
          return;
        }
      }
    }
    info.textContent = 'not found';
  }
  $('#find-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('#find').value;
    if (q) find(q);
  });
  document.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' || e.target.tagName === 'SELECT') return;
    if (e.key === 'n') stepHit(1);
    else if (e.key === 'p' || e.key === 'N') stepHit(-1);
    else if (e.key === 'Escape') clearHits();
    else if (e.key === 'ArrowDown' || e.key === 'j') { if (S.sel < N - 1) select(S.sel + 1); e.preventDefault(); }
    else if (e.key === 'ArrowUp' || e.key === 'k') { if (S.sel > 0) select(S.sel - 1); e.preventDefault(); }
  });

  // ---- header: title, summary, the rejection ----
  $('#title').textContent = D.title + (D.title !== D.program ? ' · ' + D.program : '');
  {
    const s = D.summary, parts = [];
    parts.push('<span class="verdict-' + s.verdict + '">' + s.verdict + '</span>');
    if (s.insns !== null) parts.push(s.insns + ' insns processed' + (s.insns_limit ? ' (limit ' + s.insns_limit + ')' : ''));
    if (s.total_states !== null) parts.push(s.total_states + ' states (peak ' + s.peak_states + ')');
    parts.push(D.totals.insn_lines + ' instruction lines, ' + D.totals.paths + ' paths');
    parts.push(N + ' log lines');
    $('#summary').innerHTML = parts.join(' · ');
  }
  if (D.diag) {
    const g = D.diag;
    let h = '';
    g.errors.forEach(([line, t], n) => {
      h += '<pre><span class="err">' + (n ? '     ' : 'error') + (n ? '  ' : ': ') + '<a class="goline" data-l="' + line + '">' + esc(t) + '</a></span></pre>';
    });
    if (g.loc >= 0) {
      const [f, line, col, fn, chain] = D.locs[g.loc];
      h += '<pre><span class="gut">  --> </span>' + srcLink(f, line, col) + '</pre>';
      const file = D.files[f];
      let src = null;
      if (file.text !== null) src = file.text.split('\n')[line - 1];
      else for (const [n, t] of file.excerpt) if (n === line) src = t;
      if (src) {
        const caretAt = col ? col - 1 : src.length - src.trimStart().length;
        h += '<pre><span class="gut">' + String(line).padStart(4) + ' | </span>' + esc(src) + '\n<span class="gut">     | </span>' + ' '.repeat(Math.max(0, caretAt)) + '<span class="err">^</span></pre>';
      }
      h += '<pre><span class="gut">    = </span>note: instruction <a class="goline" data-l="' + failLine + '">' + esc(g.insn_text) + '</a> in <b>' + esc(fn) + '</b></pre>';
      for (const [caller, cf, cl, cc] of chain) h += '<pre><span class="gut">    = </span>note: inlined from <b>' + esc(caller) + '</b>' + (cf >= 0 ? ' at ' + srcLink(cf, cl, cc) : '') + '</pre>';
    } else {
      h += '<pre><span class="gut">    = </span>note: instruction <a class="goline" data-l="' + failLine + '">' + esc(g.insn_text) + '</a></pre>';
    }
    for (const [call, loc] of g.stack.slice().reverse()) {
      const site = loc >= 0 ? D.locs[loc] : null;
      const callLine = prevInsn(call, failLine);
      h += '<pre><span class="gut">    = </span>note: called from ' + (site ? '<b>' + esc(site[3]) + '</b> at ' + srcLink(site[0], site[1], site[2]) : 'an unknown place') + ' (<a class="goline" data-l="' + callLine + '">instruction ' + call + '</a>)</pre>';
    }
    if (g.pass) h += '<pre><span class="gut">    = </span>note: verified on its own as a global function: ' + esc(g.pass) + '</pre>';
    if (g.state) h += '<pre><span class="gut">    = </span>note: registers as printed at instruction ' + g.state[0] + ': ' + esc(g.state[1]) + '</pre>';
    $('#diag').innerHTML = h;
    $('#diag').hidden = false;
  }
  if (X) {
    // Why: the class, the chain of the offending value from its origin to the failure, the help.
    const gut = '<span class="gut">    = </span>';
    let h = '<pre>' + gut + 'class: <b>' + esc(X.title) + '</b> [' + esc(X.class) + ']</pre>';
    h += '<pre>' + gut + 'requires: ' + esc(X.requires) + '</pre>';
    if (X.chain.length > 1) h += '<pre>' + gut + 'where the value came from:</pre>';
    h += '<ol class="chain">';
    X.chain.forEach((s, n) => {
      const at = s.file ? s.file.split('/').pop() + ':' + s.line + ':' + s.column : 'insn ' + s.insn;
      h += '<li><a class="step role-' + esc(s.role) + '" data-step="' + n + '" title="instruction ' + s.insn + ': show its line in the log and the source">'
        + '<span class="role">' + esc(s.role) + '</span> <span class="at">' + esc(at) + '</span> <code class="src">' + esc(s.source) + '</code>'
        + ' <span class="insn">[' + esc(s.instruction) + ']</span>' + (s.note ? ' <span class="note">(' + esc(s.note) + ')</span>' : '') + '</a></li>';
    });
    h += '</ol><pre class="help">' + gut + '<b>help</b>: ' + esc(X.help) + '</pre>';
    const box = document.createElement('div');
    box.id = 'explain';
    box.innerHTML = h;
    $('#diag').appendChild(box);
    $('#diag').hidden = false;
  }

  // A load that failed with no rejection: what the loader said, and where.
  if (D.load_failed) {
    const note = document.createElement('pre');
    note.id = 'load-failed';
    note.innerHTML = '<b>note</b>: line ' + D.load_failed[0] + ': ' + esc(D.load_failed[1]);
    $('#diag').appendChild(note);
    $('#diag').hidden = false;
  }

  // ---- first render: the pieces of the first rows and of the failing instruction first ----
  document.documentElement.style.setProperty('--lnw', String(N).length + 1 + 'ch');
  if (PIECES.length) await Promise.all([load(0), load(pieceOf(Math.max(0, failLine)))]);
  buildView();
  if (fileOrder.length) showFile(fileOrder[0]);
  if (failLine >= 0) select(failLine, { center: true });
  else if (D.src.length) {
    // Accepted: show the hottest line of the hottest file.
    let best = -1;
    D.src.forEach((s, id) => { if (s[0] === fileOrder[0] && (best < 0 || s[2] > D.src[best][2])) best = id; });
    if (best >= 0) { const r = S.srcRows.findIndex((row) => row[2] === best); if (r >= 0) srcList.reveal(r, true); }
  }
  // For tests and the curious: the page's state, and a few actions.
  window.bpflog = {
    state: () => ({ step: S.step, sel: S.sel, insn: S.sel >= 0 ? insn[S.sel] : -1, frame: S.sel >= 0 ? frameAt(S.sel) : -1, file: S.file, hlLine: S.hlLine, picked: S.picked, hits: S.hits ? Array.from(S.hits) : null, hitPos: S.hitPos, rows: logList.n, pieces: PIECES.length, inflated: cache.size }),
    select: (k) => select(k, { center: true }),
    lineOfInsn: (i, from) => nextInsn(i, from === undefined ? -1 : from),
    // The text of log line k, once its piece is inflated (undefined until then; textOf waits).
    text,
    textOf: async (k) => { await load(pieceOf(k)); return text(k); },
    lines: N,
  };
  // Milliseconds from navigation start to the first render, and of this script alone.
  window.bpflogReady = performance.now();
  window.bpflogScript = window.bpflogReady - t0;
  document.body.dataset.ready = '1';
})();
