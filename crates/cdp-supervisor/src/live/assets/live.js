// The live view: one WebSocket (frames and state in, input out) and the
// small API (answer, done) under this page's token. No external script;
// page text is only ever set as text, never as HTML.
'use strict';
(function () {
  const base = location.pathname.replace(/\/+$/, '');
  const $ = (id) => document.getElementById(id);
  const screen = $('screen'), stage = $('stage'), who = $('who'), done = $('done');
  let state = null, closed = false, socket = null, lastMove = 0, pressed = false;

  function notice(text, good) {
    const n = $('notice');
    n.textContent = text;
    n.className = good ? 'good' : '';
    n.hidden = !text;
  }

  function control() {
    return !closed && state && state.access === 'control' && state.controller === 'person';
  }

  function el(tag, props, text) {
    const e = document.createElement(tag);
    Object.assign(e, props || {});
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function post(path, body) {
    const r = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body || {}),
      credentials: 'omit',
    });
    if (r.status === 404) { end('This link has ended: the task was handed back or closed.'); return null; }
    const j = await r.json().catch(() => ({}));
    if (!r.ok) notice(j.error || ('The supervisor answered ' + r.status));
    return r.ok ? j : null;
  }

  function renderPrompts(list) {
    const box = $('prompts');
    const keep = new Set((list || []).map((d) => d.id));
    for (const old of Array.from(box.children)) if (!keep.has(old.dataset.dialogId)) old.remove();
    for (const d of list || []) {
      if (box.querySelector('[data-dialog-id="' + CSS.escape(d.id) + '"]')) continue;
      const p = el('div', { className: 'prompt' });
      p.dataset.dialogId = d.id;
      p.appendChild(el('div', { className: 'kind' }, d.type === 'http_auth' ? 'Sign-in requested' : d.type));
      const msg = d.type === 'http_auth' ? (d.origin || d.url || '') + (d.realm ? ' — ' + d.realm : '') : (d.message || '');
      p.appendChild(el('div', { className: 'message' }, msg));
      const fields = {};
      if (d.type === 'prompt') {
        fields.text = el('input', { type: 'text', value: d.default_prompt || '', autocomplete: 'off' });
        fields.text.setAttribute('aria-label', 'Answer');
        p.appendChild(fields.text);
      }
      if (d.type === 'http_auth') {
        fields.username = el('input', { type: 'text', placeholder: 'Username', autocomplete: 'off' });
        fields.password = el('input', { type: 'password', placeholder: 'Password', autocomplete: 'off' });
        p.appendChild(fields.username);
        p.appendChild(fields.password);
      }
      const buttons = el('div', { className: 'buttons' });
      for (const [action, label] of [['accept', d.type === 'http_auth' ? 'Sign in' : 'OK'], ['dismiss', 'Cancel']]) {
        const b = el('button', { type: 'button' }, label);
        b.dataset.action = action;
        b.addEventListener('click', async () => {
          const body = { dialog_id: d.id, action };
          if (action === 'accept') {
            if (fields.text) body.text = fields.text.value;
            if (fields.username) { body.username = fields.username.value; body.password = fields.password.value; }
          }
          b.disabled = true;
          const r = await post('/answer', body);
          if (fields.password) fields.password.value = '';
          if (!r) b.disabled = false; else p.remove();
        });
        buttons.appendChild(b);
      }
      p.appendChild(buttons);
      box.appendChild(p);
    }
    for (const b of box.querySelectorAll('button')) b.disabled = !control();
  }

  function renderState(s) {
    state = s;
    if (s.controller === 'person') {
      who.textContent = (s.access === 'control' ? 'You are in control' : 'A person is in control') + (s.reason ? ': ' + s.reason : '');
      who.className = 'person';
    } else {
      who.textContent = 'The agent is in control' + (s.access === 'view' ? ' (watching)' : '');
      who.className = '';
    }
    done.hidden = !control();
    stage.classList.toggle('control', control());
    $('url').textContent = s.url || '';
    const tabs = $('tabs');
    tabs.textContent = '';
    for (const t of s.tabs || []) {
      // In control, a tab is a button: the picture shows the one chosen
      // (a sign-in popup the person opened, say).
      const e = el(control() ? 'button' : 'div', { className: 'tab' + (t.current ? ' current' : ''), title: t.url || '' }, t.title || t.url || 'New tab');
      e.dataset.targetId = t.target_id;
      if (control() && !t.current) {
        e.type = 'button';
        e.addEventListener('click', () => sendRaw({ type: 'tab', target_id: t.target_id }));
      }
      tabs.appendChild(e);
    }
    renderPrompts(s.pending_dialogs);
    if (s.connection && s.connection !== 'connected') {
      notice(s.connection === 'closed'
        ? 'The browser is gone (it closed or crashed). Press Done to hand back: the agent can start it again.'
        : 'The browser is reconnecting (' + s.connection + ')…');
    } else if (document.getElementById('notice').textContent.startsWith('The browser ')) {
      notice('');
    }
    $('help').textContent = control()
      ? 'Click, scroll and type on the picture as on the page itself; paste with your usual shortcut. Press Done when you have finished: nothing you type is shown to the agent.'
      : '';
  }

  function end(text) {
    closed = true;
    done.hidden = true;
    stage.classList.remove('control');
    for (const b of document.querySelectorAll('#prompts button')) b.disabled = true;
    who.textContent = text;
    who.className = '';
    notice(text, true);
    if (socket) socket.close();
  }

  function sendRaw(m) {
    if (control() && socket && socket.readyState === 1) socket.send(JSON.stringify(m));
  }

  // Input for the page; a long paste goes in parts (a message is at most 64 KiB).
  function send(m) {
    if (m.type === 'text' && m.text.length > 2000) {
      for (let i = 0; i < m.text.length; i += 2000) sendRaw({ type: 'text', text: m.text.slice(i, i + 2000) });
      return;
    }
    sendRaw(m);
  }

  function at(e) {
    const r = screen.getBoundingClientRect();
    return { x: (e.clientX - r.left) / r.width, y: (e.clientY - r.top) / r.height };
  }

  function mods(e) {
    return (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  }

  const buttonName = ['left', 'middle', 'right'];
  screen.addEventListener('mousedown', (e) => {
    if (!control()) return;
    e.preventDefault();
    const point = at(e);
    pressed = true;
    // Keys go where the mouse went: to the picture (without scrolling the
    // live page, which would move the picture under the pointer).
    stage.focus({ preventScroll: true });
    send(Object.assign({ type: 'mouse', event: 'down', button: buttonName[e.button] || 'left', click_count: e.detail || 1, modifiers: mods(e) }, point));
  });
  // A press on the picture is released wherever the pointer is then (a
  // drag that ends off the picture must not leave the page's button held).
  window.addEventListener('mouseup', (e) => {
    if (!pressed || !control()) return;
    pressed = false;
    e.preventDefault();
    const p = at(e);
    p.x = Math.min(1, Math.max(0, p.x));
    p.y = Math.min(1, Math.max(0, p.y));
    send(Object.assign({ type: 'mouse', event: 'up', button: buttonName[e.button] || 'left', click_count: e.detail || 1, modifiers: mods(e) }, p));
  });
  screen.addEventListener('mousemove', (e) => {
    const now = performance.now();
    if (!control() || now - lastMove < 30) return;
    lastMove = now;
    send(Object.assign({ type: 'mouse', event: 'move', modifiers: mods(e) }, at(e)));
  });
  screen.addEventListener('wheel', (e) => {
    if (!control()) return;
    e.preventDefault();
    send(Object.assign({ type: 'mouse', event: 'wheel', delta_x: e.deltaX, delta_y: e.deltaY, modifiers: mods(e) }, at(e)));
  }, { passive: false });
  screen.addEventListener('contextmenu', (e) => { if (control()) e.preventDefault(); });
  for (const [name, event] of [['touchstart', 'start'], ['touchmove', 'move'], ['touchend', 'end'], ['touchcancel', 'cancel']]) {
    screen.addEventListener(name, (e) => {
      if (!control()) return;
      e.preventDefault();
      send({ type: 'touch', event, points: Array.from(e.touches).map(at) });
    }, { passive: false });
  }
  stage.addEventListener('keydown', (e) => {
    if (!control()) return;
    if ((e.ctrlKey || e.metaKey) && (e.key === 'v' || e.key === 'V')) return; // the paste event sends the text
    e.preventDefault();
    send({ type: 'key', event: 'down', key: e.key, code: e.code, modifiers: mods(e) });
  });
  stage.addEventListener('keyup', (e) => {
    if (!control()) return;
    e.preventDefault();
    send({ type: 'key', event: 'up', key: e.key, code: e.code, modifiers: mods(e) });
  });
  document.addEventListener('paste', (e) => {
    if (!control() || document.activeElement !== stage) return;
    e.preventDefault();
    const text = (e.clipboardData || window.clipboardData).getData('text');
    if (text) send({ type: 'text', text });
  });
  done.addEventListener('click', async () => {
    done.disabled = true;
    const r = await post('/done', {});
    if (r) end('Handed back to the agent. Thank you — you can close this page.');
    else done.disabled = false;
  });

  function connect() {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    socket = new WebSocket(scheme + location.host + base + '/ws');
    socket.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (_) { return; }
      if (m.type === 'frame') {
        screen.src = 'data:image/jpeg;base64,' + m.data;
        // What the picture shows, for embedders and tests: the page's
        // viewport size and scroll, in CSS pixels.
        screen.dataset.width = m.width;
        screen.dataset.height = m.height;
        screen.dataset.scrollX = m.scroll_x;
        screen.dataset.scrollY = m.scroll_y;
        screen.dataset.seq = m.seq;
        $('waiting').hidden = true;
      } else if (m.type === 'ended' || m.type === 'handed_back') {
        end(m.message);
      } else if (m.type === 'error') {
        notice(m.message);
      } else if (m.task !== undefined) {
        renderState(m);
      }
    };
    socket.onclose = () => {
      if (closed) return;
      notice('The connection to the supervisor dropped; trying again…');
      setTimeout(() => {
        fetch(base + '/state', { credentials: 'omit' }).then((r) => {
          if (r.status === 404) end('This link has ended: the task was handed back or closed.');
          else { notice(''); connect(); }
        }).catch(() => setTimeout(connect, 2000));
      }, 1000);
    };
  }
  connect();
})();
