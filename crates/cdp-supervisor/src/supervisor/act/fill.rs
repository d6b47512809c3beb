//! Filling form fields as a person does (`browser_fill_form`, and
//! `browser_type` into the inputs that take no typed text): text typed over
//! what the field held, a `<select>` chosen, a checkbox or radio clicked to
//! the state asked for, and a date, time, month, week, colour or range set
//! to its value with the `input` and `change` a person's picker fires.
//!
//! Every field is checked before anything is filled (an unknown ref, a
//! value the field cannot take: nothing is done). Each field's input then
//! goes through [`Supervisor::interruptible`], so a dialog that opens
//! midway (a `change` handler's `alert`) stops the form there: the fields
//! before it are filled, its own input is queued in the page (delivered once
//! in `completed_calls`), the ones after it are not touched.
//!
//! [`Supervisor::interruptible`]: crate::supervisor::driver::Supervisor::interruptible

use super::call_on;
use super::keys::{key_of, press};
use super::refs::NodeRef;
use super::{ACTION_TIMEOUT, ActError, Page};
use crate::cdp::connection::{CommandError, Connection};
use crate::supervisor::driver::{CallOutcome, CdpCallError};
use crate::supervisor::state::Target;
use serde_json::{Map, Value, json};

/// Most fields one `browser_fill_form` takes.
pub const FILL_MAX_FIELDS: usize = 100;
/// Most characters of an agent's value an error quotes (DESIGN "Security").
const QUOTE_MAX_CHARS: usize = 200;

/// How a field takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Typed: text, search, email, url, tel, password, number, a textarea,
    /// an editable element.
    Text,
    /// A picker's value set with `input` and `change`: date, time,
    /// datetime-local, month, week, color, range.
    Picked,
    /// A `<select>`: options chosen by value or label.
    Select,
    /// A checkbox or radio: clicked when its state differs.
    Check { checked: bool },
}

/// One field, checked: where it is and how it takes `value`.
struct Checked {
    r: String,
    value: String,
    conn: Connection,
    node: NodeRef,
    object: String,
    kind: Kind,
    secret: bool,
}

/// What a field got, as the result says it.
fn got(kind: Kind, secret: bool, v: Value) -> Value {
    match (kind, v) {
        (_, Value::String(s)) if secret => {
            json!(format!("({} characters, not shown)", s.chars().count()))
        }
        (Kind::Select, v) => match v.get("selected") {
            Some(Value::Array(one)) if one.len() == 1 => one[0].clone(),
            Some(many) => many.clone(),
            None => v,
        },
        (_, v) => v,
    }
}

/// An agent's value as an error quotes it: at most [`QUOTE_MAX_CHARS`].
pub(super) fn quote(v: &str) -> String {
    let cut: String = v.chars().take(QUOTE_MAX_CHARS).collect();
    if cut.len() < v.len() {
        format!("{:?}… ({} characters)", cut, v.chars().count())
    } else {
        format!("{cut:?}")
    }
}

impl Page {
    /// `browser_fill_form`: each `(ref, value)` in order. Returns
    /// `{filled: {ref: what it got}}`, or — when a dialog interrupts a
    /// field — [`CallOutcome::Interrupted`] for that field's input, with
    /// what was filled and what was not beside it (see [`FillStop`]).
    ///
    /// # Errors
    /// A stale ref or a value a field cannot take (nothing filled); a
    /// field's own failure midway (the error says which were filled).
    pub async fn fill_form(&self, fields: Vec<(String, String)>) -> Result<FillOutcome, ActError> {
        let mut checked = Vec::with_capacity(fields.len());
        for (r, value) in fields {
            checked.push(self.check_field(r, value).await?);
        }
        let mut filled = Map::new();
        let mut left = checked.into_iter();
        while let Some(f) = left.next() {
            let not_filled: Vec<String> = left.as_slice().iter().map(|f| f.r.clone()).collect();
            let r = f.r.clone();
            let (kind, secret) = (f.kind, f.secret);
            let outcome = match self.fill_checked(f).await {
                Ok(o) => o,
                Err(e) => {
                    let mut rest = vec![r.clone()];
                    rest.extend(not_filled);
                    return Err(ActError::Element(format!(
                        "{e}; filled before it: {}; not filled: {}",
                        list(filled.keys()),
                        list(rest.iter())
                    )));
                }
            };
            match outcome {
                CallOutcome::Reply(v) => {
                    filled.insert(r, got(kind, secret, v));
                }
                CallOutcome::Interrupted {
                    call_id,
                    pending_dialogs,
                } => {
                    return Ok(FillOutcome::Stopped(FillStop {
                        filled,
                        queued: r,
                        not_filled,
                        outcome: CallOutcome::Interrupted {
                            call_id,
                            pending_dialogs,
                        },
                    }));
                }
                other @ CallOutcome::TimedOut { .. } => {
                    return Ok(FillOutcome::Stopped(FillStop {
                        filled,
                        queued: r,
                        not_filled,
                        outcome: other,
                    }));
                }
            }
        }
        Ok(FillOutcome::Done(json!({ "filled": filled })))
    }

    /// Finds the field again and checks that it takes `value`, changing nothing.
    async fn check_field(&self, r: String, value: String) -> Result<Checked, ActError> {
        let (conn, node, object) = self.resolve_ref(&r).await?;
        let v = call_on(
            &conn,
            &node.session,
            &object,
            FIELD_FN,
            json!([{"value": value}]),
        )
        .await
        .map_err(|e| {
            ActError::Element(format!(
                "ref {r} could not be read ({e}); nothing was filled"
            ))
        })?;
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            return Err(ActError::Element(format!(
                "ref {r} cannot take {}: {e}; nothing was filled",
                quote(&value)
            )));
        }
        let kind = match v.get("kind").and_then(Value::as_str) {
            Some("picked") => Kind::Picked,
            Some("select") => Kind::Select,
            Some("check") => Kind::Check {
                checked: v.get("checked") == Some(&Value::Bool(true)),
            },
            _ => Kind::Text,
        };
        let secret = v.get("secret") == Some(&Value::Bool(true));
        Ok(Checked {
            r,
            value,
            conn,
            node,
            object,
            kind,
            secret,
        })
    }

    /// One checked field's input, as a call a dialog interrupts.
    async fn fill_checked(&self, f: Checked) -> Result<CallOutcome, ActError> {
        if let Kind::Check { checked } = f.kind {
            let want = f.value == "true";
            if checked == want {
                return Ok(CallOutcome::Reply(json!(want)));
            }
            return self.toggle(&f, want).await;
        }
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
        let session = f.node.session.clone();
        let backend = f.node.backend_node_id;
        let object = f.object.clone();
        let (kind, value) = (f.kind, f.value.clone());
        let work = async move {
            let on = |method: &'static str, params: Value| {
                me.send_agent(Target::Session(session.clone()), method, params, keep)
            };
            let call = |f: &str, args: Value| {
                on(
                    "Runtime.callFunctionOn",
                    json!({"objectId": object, "functionDeclaration": f, "arguments": args,
                           "returnByValue": true, "userGesture": true}),
                )
            };
            // Focus first, as a person's click or Tab would: the field left
            // fires its change (whose handler may open a dialog).
            on("DOM.focus", json!({"backendNodeId": backend})).await?;
            let v = match kind {
                Kind::Text => {
                    call(SELECT_ALL_FN, json!([])).await?;
                    if value.is_empty() {
                        press(
                            &me,
                            &session,
                            &key_of("Delete").expect("Delete is known"),
                            keep,
                        )
                        .await?;
                    } else {
                        on("Input.insertText", json!({"text": value})).await?;
                    }
                    call(VALUE_FN, json!([])).await?
                }
                Kind::Picked => call(SET_VALUE_FN, json!([{"value": value}])).await?,
                Kind::Select => call(SELECT_FN, json!([{"value": [value]}])).await?,
                Kind::Check { .. } => unreachable!("clicked, not filled"),
            };
            let value = v.pointer("/result/value").cloned().unwrap_or(Value::Null);
            match value.get("error").and_then(Value::as_str) {
                Some(e) => Err(CdpCallError::Command(CommandError::Protocol {
                    method: "browser_fill_form".into(),
                    code: 0,
                    message: e.to_owned(),
                    data: None,
                })),
                None => Ok(value),
            }
        };
        Ok(self
            .supervisor
            .interruptible("browser_fill_form", work, ACTION_TIMEOUT)
            .await?)
    }

    /// `browser_type` into a date, time, datetime-local, month, week,
    /// color, range or number input, which Chromium gives no typed text
    /// (`Input.insertText` into a date sets nothing): `None` when `object`
    /// is none of them; an error naming the format when the field would not
    /// keep `text`; for a picker, its value set as `browser_fill_form` sets
    /// it (then Enter when `submit`): `{typed, chars, submitted, value}`.
    pub(super) async fn pick(
        &self,
        (conn, node, object): (&Connection, &NodeRef, &str),
        r: &str,
        text: &str,
        submit: bool,
    ) -> Result<Option<CallOutcome>, ActError> {
        let f = format!(
            "function(v){{if(this.tagName!=='INPUT'||!['date','time','datetime-local','month','week','color','range','number'].includes(this.type))return {{kind:'other'}};return ({FIELD_FN}).call(this,v)}}"
        );
        let v = call_on(conn, &node.session, object, &f, json!([{"value": text}]))
            .await
            .map_err(ActError::Element)?;
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            return Err(ActError::Element(format!(
                "ref {r} cannot take {}: {e}; nothing was typed",
                quote(text)
            )));
        }
        if v.get("kind").and_then(Value::as_str) != Some("picked") {
            return Ok(None);
        }
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
        let session = node.session.clone();
        let backend = node.backend_node_id;
        let object = object.to_owned();
        let (r, text) = (r.to_owned(), text.to_owned());
        let work = async move {
            me.send_agent(
                Target::Session(session.clone()),
                "DOM.focus",
                json!({"backendNodeId": backend}),
                keep,
            )
            .await?;
            let v = me
                .send_agent(
                    Target::Session(session.clone()),
                    "Runtime.callFunctionOn",
                    json!({"objectId": object, "functionDeclaration": SET_VALUE_FN,
                           "arguments": [{"value": text}], "returnByValue": true, "userGesture": true}),
                    keep,
                )
                .await?;
            if submit {
                press(
                    &me,
                    &session,
                    &key_of("Enter").expect("Enter is known"),
                    keep,
                )
                .await?;
            }
            let value = v.pointer("/result/value").cloned().unwrap_or(Value::Null);
            Ok(
                json!({"typed": r, "chars": text.chars().count(), "submitted": submit, "value": value}),
            )
        };
        Ok(Some(
            self.supervisor
                .interruptible("browser_type", work, ACTION_TIMEOUT)
                .await?,
        ))
    }

    /// A checkbox or radio clicked as a person would (real mouse events);
    /// one that cannot be clicked where it is drawn (a styled control that
    /// hides the input under its label) is activated in the page instead,
    /// which fires the same `click`, `input` and `change`.
    async fn toggle(&self, f: &Checked, want: bool) -> Result<CallOutcome, ActError> {
        let clicked = match self.click(&f.r, "left", 1).await {
            Err(ActError::Element(_)) => None,
            other => Some(other?),
        };
        let outcome = match clicked {
            Some(CallOutcome::Reply(_)) => {
                let now = call_on(&f.conn, &f.node.session, &f.object, CHECKED_FN, json!([]))
                    .await
                    .map_err(ActError::Element)?;
                return Ok(CallOutcome::Reply(now));
            }
            Some(other) => other,
            None => {
                let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
                let v = self.supervisor.send_agent(
                    Target::Session(f.node.session.clone()),
                    "Runtime.callFunctionOn",
                    json!({"objectId": f.object, "functionDeclaration": ACTIVATE_FN,
                           "returnByValue": true, "userGesture": true}),
                    keep,
                );
                self.supervisor
                    .interruptible(
                        "browser_fill_form",
                        async move {
                            let v = v.await?;
                            Ok(v.pointer("/result/value").cloned().unwrap_or(Value::Null))
                        },
                        ACTION_TIMEOUT,
                    )
                    .await?
            }
        };
        if let CallOutcome::Reply(v) = &outcome
            && v != &Value::Bool(want)
        {
            return Err(ActError::Element(format!(
                "ref {} did not become {want} when clicked (the page keeps it {v})",
                f.r
            )));
        }
        Ok(outcome)
    }
}

/// What `browser_fill_form` did.
#[derive(Debug)]
pub enum FillOutcome {
    /// Every field filled: `{filled: {ref: what it got}}`.
    Done(Value),
    /// A dialog (or the deadline) stopped it at a field.
    Stopped(FillStop),
}

/// A form a dialog stopped midway.
#[derive(Debug)]
pub struct FillStop {
    /// The fields filled before it: ref → what each got.
    pub filled: Map<String, Value>,
    /// The field whose input the dialog holds: queued in the page, it runs
    /// once the dialog is answered (its outcome comes once, in `completed_calls`).
    pub queued: String,
    /// The fields after it, untouched.
    pub not_filled: Vec<String>,
    /// The queued input's call: interrupted or timed out.
    pub outcome: CallOutcome,
}

fn list<'a>(refs: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = refs.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The kind of field `this` is and whether it takes `v`, changing nothing:
/// `{kind: text | picked | select | check, checked?, secret?}` or `{error}`.
/// A picker's value is tried on a detached twin (same type, min, max,
/// step): the browser's own sanitizing says whether the field would keep it.
pub(super) const FIELD_FN: &str = r#"function(v){
const t=this.tagName?this.tagName.toLowerCase():'';
if(this.disabled)return {error:'it is disabled'};
if(t==='select'){const opts=Array.from(this.options);if(!opts.some(o=>o.value===v||o.label===v||o.text.trim()===v))return {error:'no option has that value or label; options: '+JSON.stringify(opts.map(o=>o.label||o.value)).slice(0,400)};return {kind:'select'}}
if(t==='textarea')return this.readOnly?{error:'it is read-only'}:{kind:'text'};
if(t!=='input')return this.isContentEditable?{kind:'text'}:{error:'it is a <'+t+'>, not a form field'};
const type=this.type;
if(type==='checkbox'||type==='radio'){if(v!=='true'&&v!=='false')return {error:'a '+type+' takes true or false'};if(type==='radio'&&v==='false'&&this.checked)return {error:'a checked radio is unchecked by choosing another radio of its group'};return {kind:'check',checked:this.checked}}
if(type==='file')return {error:'it is a file input: click it (browser_click) and answer the file chooser with browser_dialog(files)'};
if(['button','submit','reset','image','hidden'].includes(type))return {error:'it is an <input type='+type+'>, not a field to fill (browser_click presses buttons)'};
if(this.readOnly)return {error:'it is read-only'};
const FORMAT={date:'YYYY-MM-DD',time:'HH:MM or HH:MM:SS','datetime-local':'YYYY-MM-DDTHH:MM',month:'YYYY-MM',week:'YYYY-Www, e.g. 2025-W07',color:'#rrggbb, e.g. #00ff7f',range:'a number',number:'a number'};
if(type in FORMAT){if(v==='')return {kind:type==='number'?'text':'picked'};
const c=document.createElement('input');c.type=type;for(const a of ['min','max','step'])if(this.hasAttribute(a))c.setAttribute(a,this.getAttribute(a));c.value=v;
const ok=type==='color'?c.value===v.toLowerCase():(type==='range'||type==='number')?(c.value!==''&&Number(c.value)===Number(v)):c.value!=='';
if(!ok){let want=FORMAT[type];if(type==='range')want+=' from '+c.min+' to '+c.max+(this.step&&this.step!=='any'?' in steps of '+this.step:'');return {error:'not a valid '+type+' value: give '+want}}
return {kind:type==='number'?'text':'picked'}}
return {kind:'text',secret:type==='password'}}"#;
/// Selects what a text field holds, so that typing replaces it.
const SELECT_ALL_FN: &str = "function(){if(typeof this.select==='function'){try{this.select();return true}catch(e){}}const r=this.ownerDocument.createRange();r.selectNodeContents(this);const s=this.ownerDocument.getSelection();s.removeAllRanges();s.addRange(r);return true}";
/// A field's value now (an editable element's text).
const VALUE_FN: &str =
    "function(){return ('value' in this)&&this.tagName!=='DIV'?this.value:this.innerText}";
/// A picker's value set, with the `input` and `change` a person's choice fires.
pub(super) const SET_VALUE_FN: &str = "function(v){this.value=v;this.dispatchEvent(new Event('input',{bubbles:true}));this.dispatchEvent(new Event('change',{bubbles:true}));return this.value}";
/// Selects the one option whose value or label is given, firing `input` and `change`.
const SELECT_FN: &str = "function(values){const opts=Array.from(this.options);const chosen=[];for(const v of values){const o=opts.find(o=>o.value===v)||opts.find(o=>o.label===v||o.text.trim()===v);if(!o)return {error:'no option has value or label '+JSON.stringify(v).slice(0,200)};chosen.push(o)}for(const o of opts)o.selected=chosen.includes(o);this.dispatchEvent(new Event('input',{bubbles:true}));this.dispatchEvent(new Event('change',{bubbles:true}));return {selected:chosen.map(o=>o.value)}}";
/// Whether a checkbox or radio is checked now.
const CHECKED_FN: &str = "function(){return this.checked}";
/// A checkbox or radio activated in the page (`click()`: `click`, `input`,
/// `change`), for one drawn where a real click cannot reach it.
const ACTIVATE_FN: &str = "function(){this.click();return this.checked}";
