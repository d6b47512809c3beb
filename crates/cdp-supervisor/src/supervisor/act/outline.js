// The outline's reader: runs in an isolated world of one frame's document
// (`Runtime.callFunctionOn` with that world's `executionContextId`), walks
// what a person can see, and returns it as flat nodes for `page.rs` to
// render. Roles and names follow Chromium's accessibility tree (HTML-AAM
// and accname, the common cases), so the outline reads like
// `Accessibility.getFullAXTree` at a fraction of its cost on a large page.
//
// Arguments: `gen` (this outline's number; the elements holding refs are
// kept as `globalThis.__cdpSupervisor = {gen, els}` in this world, where an
// action finds them again), `max` (the most nodes to return), `budgetMs`
// (the longest it walks, in milliseconds), `actionable` (the roles a
// person acts on: page.rs's ACTIONABLE_ROLES, which get refs), then the
// iframe elements of this document that hold child frames, in the order
// the caller asked.
// Returns `{nodes, owners, cut}`: `nodes[i] = [parent, role, name, value,
// states, key]` (parent -1 for the root; `key` indexes `els`, -1 for none;
// `states` an object such as `{checked: true, level: 2}` or 0), `owners[k]`
// the key of the k-th iframe element given (-1 when it is not shown), and
// `cut` whether `max` or `budgetMs` stopped the walk.
function (gen, max, budgetMs, actionable, ...frameOwners) {
  const started = performance.now();
  const nodes = [];
  const els = [];
  const owners = frameOwners.map(() => -1);
  const ownerIndex = new Map(frameOwners.map((o, i) => [o, i]));
  let cut = false;
  const ws = (s) => s.replace(/\s+/g, ' ').trim();
  const attr = (el, a) => {
    const v = el.getAttribute(a);
    return v === null ? null : ws(v);
  };
  const keyOf = (el) => {
    els.push(el);
    return els.length - 1;
  };
  // A name, value or text past this says no more to a reader, and a page
  // can make one megabytes long (an MCP SDK over HTTP fails on an event
  // past 1 MiB): cut, marked.
  const LONG = 2000;
  const capped = (t) => (t && t.length > LONG ? t.slice(0, LONG) + '… (cut: ' + t.length + ' chars)' : t || '');
  const add = (parent, role, name, value, states, el) => {
    if (nodes.length >= max) {
      cut = true;
      return -1;
    }
    nodes.push([parent, role, capped(name), capped(value), states || 0, el ? keyOf(el) : -1]);
    return nodes.length - 1;
  };
  const shown = (el) => el.checkVisibility({ visibilityProperty: true });
  // A container off to the left of or above the document, where no
  // scrolling reaches (an off-canvas menu), or clipped to nothing (a
  // collapsed panel). A control stays listed wherever it is (a skip link
  // parked above the page shows when focused; clicking one of no size is
  // an error that says so).
  // A box of no size that clips (overflow other than visible) shows none
  // of its content, except what is positioned out of its clip: a fixed
  // box, or an absolute one whose containing block is outside it. An app
  // shell's `body{overflow:hidden}` holding only fixed layers has no
  // height at all, and a person sees every one of them. The first
  // ESCAPE_SCAN elements inside are looked at (a layer is near the top of
  // its container; a collapsed menu costs no more than that).
  const ESCAPE_SCAN = 200;
  const escapesClip = (el) => {
    const inside = el.getElementsByTagName('*');
    const n = Math.min(inside.length, ESCAPE_SCAN);
    for (let i = 0; i < n; i++) {
      const d = inside[i];
      const p = getComputedStyle(d).position;
      if (p === 'fixed') return true;
      if (p === 'absolute' && !(d.offsetParent && el.contains(d.offsetParent))) return true;
    }
    return false;
  };
  const offCanvas = (el, control) => {
    if (control) return false;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) {
      const o = getComputedStyle(el);
      return o.display !== 'contents' && o.overflow !== 'visible' && !escapesClip(el);
    }
    return r.right + window.scrollX <= 0 || r.bottom + window.scrollY <= 0 ||
      r.left + window.scrollX >= document.documentElement.scrollWidth;
  };
  // While a modal <dialog> shows, everything outside it is inert.
  const modal = document.querySelector('dialog:modal');
  const hiddenSubtree = (el, control) =>
    el.getAttribute('aria-hidden') === 'true' || el.inert ||
    (modal !== null && !el.contains(modal) && !modal.contains(el)) ||
    // A display:contents wrapper has no box of its own; its children do.
    (!el.checkVisibility() && getComputedStyle(el).display !== 'contents') ||
    offCanvas(el, control);

  const inline = new Set(['A', 'SPAN', 'B', 'I', 'EM', 'STRONG', 'CODE', 'SMALL', 'SUB', 'SUP', 'ABBR', 'MARK', 'Q', 'S', 'U', 'KBD', 'VAR', 'SAMP', 'TIME', 'WBR', 'BDI', 'BDO', 'CITE', 'DFN', 'DATA', 'DEL', 'INS']);
  // Text is given a block at a time: the first text met in a block of
  // running text (a paragraph, a code block, a table cell: its children
  // are text and inline elements only) stands for the whole block, minus
  // what its links and controls say on their own lines; the others are
  // not given again. Text beside block elements (a status line in a
  // page's main) stands alone. Blocks are found by tag: cheaper than styles.
  const blockTag = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'DD', 'DETAILS', 'DIALOG', 'DIV', 'DL', 'DT',
    'FIELDSET', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI',
    'MAIN', 'NAV', 'OL', 'P', 'PRE', 'SECTION', 'TABLE', 'TBODY', 'THEAD', 'TFOOT', 'TR', 'TD', 'TH', 'UL', 'SUMMARY',
    'BODY', 'HTML', 'IFRAME', 'SELECT', 'TEXTAREA', 'BUTTON']);
  const ownLine = 'a[href],button,input,select,textarea,[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=option],[role=switch],[contenteditable]';
  const blocks = new Map();
  // The text to give for text node `t` (null: already given with its block).
  const blockText = (t) => {
    let b = t.parentElement;
    while (b && !blockTag.has(b.tagName) && b.parentElement && !b.shadowRoot) b = b.parentElement;
    if (!b) return ws(t.data);
    // A link's or a control's own text is its name, on its line.
    const own = t.parentElement && t.parentElement.closest(ownLine);
    if (own && b.contains(own) && own !== b) return null;
    let running = blocks.get(b);
    if (running === undefined) {
      running = b.tagName === 'PRE' || !Array.from(b.children).some((c) => blockTag.has(c.tagName));
      blocks.set(b, running);
      if (running) {
        let out = '';
        const w = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
        for (let x = w.nextNode(); x; x = w.nextNode()) {
          const e = x.parentElement;
          if (e !== b && e.closest(ownLine) && b.contains(e.closest(ownLine))) continue;
          if (e.closest('[aria-hidden=true]') && b.contains(e.closest('[aria-hidden=true]'))) continue;
          if (!e.checkVisibility({ visibilityProperty: true })) continue;
          out += x.data;
        }
        return ws(out);
      }
    }
    return running ? null : ws(t.data);
  };
  // The text a person sees inside `el` (name from content): text nodes,
  // images' alt, form controls' values; hidden parts left out.
  // An svg's name: aria-label, else its own <title> (an icon link's only text).
  const svgName = (el) => {
    const label = attr(el, 'aria-label');
    if (label) return label;
    const title = el.querySelector(':scope > title');
    return title ? ws(title.textContent) : '';
  };
  const textOf = (el, depth) => {
    if (depth > 30) return '';
    let out = '';
    for (let c = el.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) {
        out += c.data;
      } else if (c.nodeType === 1) {
        if (c.getAttribute('aria-hidden') === 'true' || !c.checkVisibility()) continue;
        const t = c.tagName;
        if (t === 'IMG' || (t === 'INPUT' && c.type === 'image')) out += ' ' + (attr(c, 'alt') || '') + ' ';
        else if (t === 'svg') out += ' ' + svgName(c) + ' ';
        else if (t === 'SCRIPT' || t === 'STYLE' || t === 'TEMPLATE') continue;
        else {
          const label = attr(c, 'aria-label');
          const sep = inline.has(t) ? '' : ' ';
          out += sep + (label || textOf(c.shadowRoot || c, depth + 1)) + sep;
        }
      }
    }
    return out;
  };
  const byIds = (el, ids) =>
    ws(
      ids
        .split(/\s+/)
        .map((id) => el.ownerDocument.getElementById(id))
        .filter(Boolean)
        .map((x) => attr(x, 'aria-label') || textOf(x, 0))
        .join(' ')
    );

  const fromContent = new Set([
    'link', 'button', 'heading', 'option', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio',
    'treeitem', 'cell', 'columnheader', 'rowheader', 'checkbox', 'radio', 'switch', 'tooltip',
    'DisclosureTriangle', 'ToggleButton', 'legend', 'caption', 'row', 'listitem'
  ]);
  const inputRole = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
    checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox',
    color: 'ColorWell', hidden: null
  };
  const sectioning = 'ARTICLE,ASIDE,MAIN,NAV,SECTION';
  const controls = new Set(actionable);
  const implicitRole = (el) => {
    const t = el.tagName;
    switch (t) {
      case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : null;
      case 'BUTTON': return 'button';
      case 'INPUT': {
        const type = (el.getAttribute('type') || 'text').toLowerCase();
        if (type in inputRole) return inputRole[type];
        return el.hasAttribute('list') ? 'combobox' : 'textbox';
      }
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'OPTION': return 'option';
      case 'OPTGROUP': return 'group';
      // An svg that names itself is an image; an unnamed one is decoration.
      case 'svg': return svgName(el) ? 'image' : null;
      case 'TEXTAREA': return 'textbox';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
      case 'IMG': return attr(el, 'alt') === '' ? null : 'image';
      case 'IFRAME': case 'FRAME': return 'Iframe';
      case 'NAV': return 'navigation';
      case 'MAIN': return 'main';
      case 'HEADER': return el.parentElement && el.parentElement.closest(sectioning) ? null : 'banner';
      case 'FOOTER': return el.parentElement && el.parentElement.closest(sectioning) ? null : 'contentinfo';
      case 'ASIDE': return 'complementary';
      case 'FORM': return 'form';
      case 'SECTION': return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') || el.hasAttribute('title') ? 'region' : null;
      case 'SEARCH': return 'search';
      case 'DIALOG': return 'dialog';
      // An open disclosure whose summary is a heading (a documentation
      // page's sections) reads as that heading; a closed one keeps its
      // line, the way to open it.
      case 'SUMMARY':
        return el.parentElement && el.parentElement.tagName === 'DETAILS' && el.parentElement.open &&
          el.querySelector('h1,h2,h3,h4,h5,h6,[role=heading]') ? null : 'DisclosureTriangle';
      case 'DETAILS': case 'FIELDSET': return 'group';
      case 'TABLE': return 'table';
      case 'TR': return 'row';
      case 'TD': return 'cell';
      case 'TH': return 'columnheader';
      case 'UL': case 'OL': return 'list';
      case 'LI': return 'listitem';
      case 'P': return 'paragraph';
      case 'LABEL': return 'LabelText';
      case 'HR': return 'separator';
      case 'PROGRESS': return 'progressbar';
      case 'METER': return 'meter';
      case 'OUTPUT': return 'status';
      case 'ARTICLE': return 'article';
      case 'BLOCKQUOTE': return 'blockquote';
      case 'FIGURE': return 'figure';
      case 'LEGEND': return 'legend';
      case 'CAPTION': return 'caption';
      default:
        return el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable) ? 'textbox' : null;
    }
  };
  const roleOf = (el) => {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0].toLowerCase();
    if (explicit === 'none' || explicit === 'presentation') return null;
    // DPUB-AAM: these are links.
    if (explicit === 'doc-noteref' || explicit === 'doc-backlink' || explicit === 'doc-biblioref' || explicit === 'doc-glossref') {
      return el.hasAttribute('href') ? 'link' : null;
    }
    return explicit || implicitRole(el);
  };
  const nameOf = (el, role) => {
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const n = byIds(el, by);
      if (n) return n;
    }
    const label = attr(el, 'aria-label');
    if (label) return label;
    const t = el.tagName;
    if (t === 'INPUT' || t === 'SELECT' || t === 'TEXTAREA') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (t === 'INPUT' && (type === 'button' || type === 'submit' || type === 'reset')) {
        return el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (t === 'INPUT' && type === 'image') return attr(el, 'alt') || attr(el, 'value') || 'Submit';
      if (el.labels && el.labels.length) {
        const n = ws(Array.from(el.labels).map((l) => labelText(l, el)).join(' '));
        if (n) return n;
      }
      return attr(el, 'title') || attr(el, 'placeholder') || '';
    }
    if (t === 'IMG' || t === 'AREA') return attr(el, 'alt') || attr(el, 'title') || '';
    if (t === 'OPTGROUP') return attr(el, 'label') || '';
    if (t === 'svg') return svgName(el);
    if (t === 'IFRAME' || t === 'FRAME') return attr(el, 'title') || '';
    if (t === 'FIELDSET') {
      const lg = el.querySelector(':scope > legend');
      if (lg) return ws(textOf(lg, 0));
    }
    if (t === 'TABLE') {
      const cap = el.querySelector(':scope > caption');
      if (cap) return ws(textOf(cap, 0));
    }
    // A closed disclosure whose summary holds a heading: named by it.
    if (role === 'DisclosureTriangle') {
      const h = el.querySelector('h1,h2,h3,h4,h5,h6,[role=heading]');
      if (h) return attr(h, 'aria-label') || ws(textOf(h, 0));
    }
    if (fromContent.has(role)) {
      const n = ws(textOf(el.shadowRoot || el, 0));
      if (n) return n;
    }
    return attr(el, 'title') || '';
  };
  // A label's text without the control inside it (its value is not its name).
  const labelText = (label, control) => {
    let out = '';
    for (let c = label.firstChild; c; c = c.nextSibling) {
      if (c === control) continue;
      if (c.nodeType === 3) out += c.data;
      else if (c.nodeType === 1 && !c.contains(control)) out += ' ' + textOf(c, 0) + ' ';
      else if (c.nodeType === 1) out += ' ' + labelText(c, control) + ' ';
    }
    return out;
  };
  const truthy = (v) => v === 'true';
  const statesOf = (el, role) => {
    const s = {};
    const aria = (a) => el.getAttribute('aria-' + a);
    if (role === 'heading') {
      const lvl = aria('level') || (/^H[1-6]$/.test(el.tagName) ? el.tagName[1] : '2');
      s.level = Number(lvl) || 2;
    }
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox' || role === 'menuitemradio') {
      const a = aria('checked');
      const c = el.tagName === 'INPUT' ? (el.indeterminate ? 'mixed' : el.checked ? 'true' : 'false') : a;
      if (c === 'true' || c === 'mixed') s.checked = c === 'true' ? true : 'mixed';
    }
    const pressed = aria('pressed');
    if (pressed === 'true' || pressed === 'mixed') s.pressed = pressed === 'true' ? true : 'mixed';
    if (el.disabled || truthy(aria('disabled')) || (el.closest && el.closest('fieldset:disabled') && 'disabled' in el)) s.disabled = true;
    const expanded = aria('expanded');
    if (expanded !== null) s.expanded = expanded === 'true';
    else if (role === 'DisclosureTriangle' && el.parentElement && el.parentElement.tagName === 'DETAILS') s.expanded = el.parentElement.open;
    if (role === 'option' && el.tagName === 'OPTION' ? el.selected : truthy(aria('selected'))) s.selected = true;
    if (el.required || truthy(aria('required'))) s.required = true;
    if (el.tagName === 'SELECT' && el.multiple) s.multiselectable = true;
    if (truthy(aria('invalid'))) s.invalid = true;
    if (el.ownerDocument.activeElement === el && el !== el.ownerDocument.body) s.focused = true;
    for (const _ in s) return s;
    return 0;
  };
  const valueOf = (el, role) => {
    const t = el.tagName;
    if (t === 'SELECT') {
      return el.multiple ? '' : el.selectedOptions.length ? ws(el.selectedOptions[0].text) : '';
    }
    if (t === 'TEXTAREA') return el.value;
    if (t === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'password') return el.value ? '•'.repeat(Math.min(el.value.length, 8)) : '';
      if (role === 'textbox' || role === 'searchbox' || role === 'slider' || role === 'spinbutton' || role === 'combobox') return el.value;
    }
    return '';
  };

  // Controls whose inside is theirs (a textarea's text, a select's popup):
  // only options are walked, and only inside a select.
  const leaf = new Set(['INPUT', 'TEXTAREA', 'IMG', 'IFRAME', 'FRAME', 'SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'svg', 'SVG', 'CANVAS', 'VIDEO', 'AUDIO', 'OBJECT', 'EMBED']);
  // One node per element and text, in document (flat tree) order; an
  // explicit stack, so no page is too deep for it.
  const stack = [];
  const pushChildren = (host, parent, labelFor, textShown) => {
    const root = host.shadowRoot || host;
    let kids;
    if (host.tagName === 'SLOT') kids = host.assignedNodes({ flatten: true });
    else kids = root.childNodes;
    if (host.tagName === 'SLOT' && kids.length === 0) kids = host.childNodes;
    for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], parent, labelFor, textShown]);
  };
  const rootEl = document.documentElement;
  const root = add(-1, 'RootWebArea', document.title, '', 0, null);
  if (rootEl) pushChildren(rootEl, root, false, true);
  let steps = 0;
  while (stack.length && !cut) {
    if ((++steps & 511) === 0 && performance.now() - started > budgetMs) {
      cut = true;
      break;
    }
    const [n, parent, inLabel, textShown] = stack.pop();
    if (n.nodeType === 3) {
      // A label's text is its control's name: said there, not twice.
      if (!textShown || inLabel || !n.data.trim()) continue;
      const text = blockText(n);
      if (text) add(parent, 'StaticText', text, '', 0, null);
      continue;
    }
    if (n.nodeType !== 1) continue;
    const el = n;
    const t = el.tagName;
    if (t === 'HEAD' || t === 'SCRIPT' || t === 'STYLE' || t === 'TEMPLATE' || t === 'NOSCRIPT') continue;
    if (t === 'SLOT') {
      pushChildren(el, parent, inLabel, textShown);
      continue;
    }
    // A closed <select>'s options (and their groups) are not rendered, yet
    // they are its choices.
    const role = roleOf(el);
    const choice = t === 'OPTION' || t === 'OPTGROUP';
    if (choice ? el.getAttribute('aria-hidden') === 'true' : hiddenSubtree(el, controls.has(role))) continue;
    const visible = choice ? !el.hidden : shown(el);
    let me = parent;
    if (role && visible && !(t === 'OPTION' && !el.closest('select,datalist,[role=listbox]'))) {
      const name = nameOf(el, role);
      // A closed <select>'s options are chosen through it (browser_select_option,
      // browser_fill_form by label), never clicked: no ref of their own.
      const chosenThrough = t === 'OPTION' && (s => !!s && !s.multiple && s.size <= 1)(el.closest('select'));
      me = add(parent, role, name, valueOf(el, role), statesOf(el, role), chosenThrough ? null : el);
      if (me < 0) break;
      if (ownerIndex.has(el)) owners[ownerIndex.get(el)] = nodes[me][5];
    } else if (!role && visible && ownerIndex.has(el)) {
      me = add(parent, 'Iframe', '', '', 0, el);
      if (me < 0) break;
      owners[ownerIndex.get(el)] = nodes[me][5];
    }
    if (t === 'SELECT' || t === 'OPTGROUP') {
      // Its options, each <optgroup>'s under the group named by its label.
      const opts = Array.from(el.children).filter((c) => c.tagName === 'OPTION' || (t === 'SELECT' && c.tagName === 'OPTGROUP'));
      for (let i = opts.length - 1; i >= 0; i--) stack.push([opts[i], me, false, visible]);
      continue;
    }
    if (leaf.has(t)) continue;
    const labelling = t === 'LABEL' && !!el.control;
    pushChildren(el, me, inLabel || labelling, visible);
  }
  globalThis.__cdpSupervisor = { gen, els };
  return { nodes, owners, cut };
}
