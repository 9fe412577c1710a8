//! Recorded inputs on the agent's path (shared/DESIGN.md §6.6): the agent types values it
//! never holds, and names the ones it does hold.
//!
//! - **`${NAME}`** as the whole value of a typing argument (a string under a typed-text name —
//!   `value`, `text`, `promptText`, a key — of any tool of the wrapped server) is replaced, just
//!   before the call is forwarded, by the variable's value (`vars.rs`) or by the literal an
//!   earlier `recordAs` named. A name with no value, a placeholder inside a longer string, a
//!   name that breaks the rule, or a known variable written where nothing is typed: the call is
//!   refused with an error result naming the placeholder, recorded, and nothing is forwarded.
//! - **`recordAs`** (`record_as.rs`) names the typed text beside it; it is taken out of the
//!   arguments and the text registered under the name first.
//! - Every variable is registered as a secret of the run when the gateway starts (with the
//!   spellings the sanitizer does not find on its own: HTML, base64, …), and a `recordAs` text
//!   before its call is forwarded, so the run names them; both are rewritten to `${NAME}` in all
//!   the agent reads from then on (`rewrite.rs`, applied by the agent's transport and to the
//!   wrapped server's stderr).
//! - **Pictures**: an image in a result is replaced by a text saying it was withheld while any
//!   page shows a registered value typed into a field that does not mask it, since its last
//!   navigation (the relay's screenshot veto, `cdp_capture::pages::veto`); without evidence
//!   (no page model) from the first such value typed on.
//!
//! Values never leave memory but to the wrapped server, inside the call that types them.

use super::journal::{Outcome, Recorder};
use super::record_as::{self, Schema};
use super::rewrite::{Added, Rewriter};
use super::vars::{self, Placeholder, Variables};
use cdp_capture::PipelineHandle;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long the gateway waits for the evidence to catch up before it judges a picture.
const PICTURE_WAIT: Duration = Duration::from_secs(2);

/// The gateway's recorded inputs (see the module docs).
pub(crate) struct Inputs {
    vars: Variables,
    rewriter: Arc<Rewriter>,
    /// `recordAs` names → their literals (memory only), in the order named.
    recorded: Mutex<BTreeMap<String, cdp_capture::SecretValue>>,
    /// Tools whose own schema has a `recordAs`: their calls pass as they are.
    own_record_as: Mutex<HashSet<String>>,
    /// A variable or a `recordAs` text was forwarded to be typed.
    typed: AtomicBool,
}

impl Inputs {
    /// The gateway's variables, each rewritten from now on.
    pub(crate) fn new(vars: Variables) -> Inputs {
        let rewriter = Arc::new(Rewriter::new());
        for (name, v) in vars.iter() {
            match rewriter.add(name, v.value.expose()) {
                Added::New => {}
                Added::Known(first) => tracing::warn!(
                    "mcp: the variables {first} and {name} have the same value: results show it as ${{{first}}}"
                ),
                Added::TooShort => tracing::warn!(
                    "mcp: the variable {name} has fewer than {} characters: it is typed, but too short to be found and masked in results or evidence",
                    cdp_sanitize::MIN_SECRET_CHARS
                ),
            }
        }
        Inputs {
            vars,
            rewriter,
            recorded: Mutex::default(),
            own_record_as: Mutex::default(),
            typed: AtomicBool::new(false),
        }
    }

    /// What the agent's transport and the stderr drain rewrite with.
    pub(crate) fn rewriter(&self) -> &Arc<Rewriter> {
        &self.rewriter
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, cdp_capture::SecretValue>> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers every variable as a secret of the run (before anything is typed), in every
    /// spelling the sanitizer does not find on its own.
    pub(crate) fn register_all(&self, h: &PipelineHandle) {
        for (name, v) in self.vars.iter() {
            register(h, name, v.value.expose());
        }
    }

    /// The words added to the gateway's `instructions`, when there is anything to say.
    pub(crate) fn instructions(&self) -> String {
        let mut s = String::from(
            "Typing tools take an optional recordAs name for text you type (e.g. ACCOUNT_NUMBER): results then show ${NAME} in its place.",
        );
        if !self.vars.is_empty() {
            let names: Vec<String> = self
                .vars
                .iter()
                .map(|(n, v)| format!("${{{n}}} ({} characters)", v.chars()))
                .collect();
            s.push_str(&format!(
                " Variables you can type without knowing them: write the placeholder as the whole value of a typing argument (fill's value, type_text's text, browser_type's text, a form field's value): {}. Results show the placeholder, never the value; evidence_list_variables lists them.",
                names.join(", ")
            ));
        }
        s
    }

    /// Adds `recordAs` to the typing tools' schemas (and remembers those with their own).
    pub(crate) fn augment(&self, tools: &mut [Tool]) {
        let mut own = self
            .own_record_as
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for t in tools {
            match record_as::augment(t) {
                Schema::Own => {
                    own.insert(t.name.to_string());
                }
                Schema::Added(_) | Schema::Nothing => {
                    own.remove(t.name.as_ref());
                }
            }
        }
    }

    /// The names the agent can use: variables and `recordAs` names, with their lengths, where
    /// they came from, and (from `typed_into`) the kinds of field each was typed into so far.
    pub(crate) fn list(&self, typed_into: &BTreeMap<String, Vec<String>>) -> Value {
        let kinds = |n: &str| typed_into.get(n).cloned().unwrap_or_default();
        let min = cdp_sanitize::MIN_SECRET_CHARS;
        let variables: Vec<Value> = self
            .vars
            .iter()
            .map(|(n, v)| {
                json!({
                    "name": n,
                    "placeholder": format!("${{{n}}}"),
                    "chars": v.chars(),
                    "source": v.source.word(),
                    "masked": v.value.expose().chars().filter(|c| !c.is_whitespace()).count() >= min,
                    "typedInto": kinds(n),
                })
            })
            .collect();
        let recorded: Vec<Value> = self
            .recorded()
            .iter()
            .map(|(n, v)| {
                json!({
                    "name": n,
                    "placeholder": format!("${{{n}}}"),
                    "chars": v.expose().chars().count(),
                    "source": "recordAs",
                    "masked": true,
                    "typedInto": kinds(n),
                })
            })
            .collect();
        json!({"variables": variables, "recorded": recorded})
    }

    /// The value a placeholder stands for: a variable's, else an earlier `recordAs` text's.
    fn value_of(&self, name: &str) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.value.expose().to_owned());
        }
        self.recorded().get(name).map(|v| v.expose().to_owned())
    }

    fn knows(&self, name: &str) -> bool {
        self.vars.get(name).is_some() || self.recorded().contains_key(name)
    }

    /// Resolves the placeholders of a call's arguments and takes its `recordAs` out, registering
    /// what it names. `Err` is the refusal, in words for the agent (names, never a value).
    pub(crate) fn prepare(
        &self,
        h: Option<&PipelineHandle>,
        tool: &str,
        args: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let mut resolved = 0;
        for (k, v) in args.iter_mut() {
            self.resolve(v, args_types(k), k, &mut resolved)?;
        }
        let own = self
            .own_record_as
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(tool);
        let named = if own {
            Vec::new()
        } else {
            record_as::strip(args)
        };
        for n in &named {
            self.record(h, n)?;
        }
        if resolved > 0 || !named.is_empty() {
            self.typed.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn resolve(
        &self,
        v: &mut Value,
        typed: bool,
        arg: &str,
        resolved: &mut usize,
    ) -> Result<(), String> {
        match v {
            Value::String(s) if typed => {
                let name = match vars::placeholder(s) {
                    Placeholder::None => return Ok(()),
                    Placeholder::Whole(name) => name.to_owned(),
                    Placeholder::BadName => return Err(bad_name(arg)),
                    Placeholder::Embedded(name) => return Err(embedded(arg, name)),
                };
                match self.value_of(&name) {
                    Some(value) => {
                        *s = value;
                        *resolved += 1;
                        Ok(())
                    }
                    None => Err(self.missing(&name)),
                }
            }
            Value::String(s) => match vars::embedded(s).find(|n| self.knows(n)) {
                Some(name) => Err(not_typed(arg, name)),
                None => Ok(()),
            },
            Value::Array(items) => items
                .iter_mut()
                .try_for_each(|item| self.resolve(item, typed, arg, resolved)),
            Value::Object(m) => m
                .iter_mut()
                .try_for_each(|(k, item)| self.resolve(item, typed || args_types(k), k, resolved)),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }

    fn missing(&self, name: &str) -> String {
        let mut known: Vec<String> = self.vars.names().map(str::to_owned).collect();
        known.extend(self.recorded().keys().cloned());
        let known = if known.is_empty() {
            "none is set".to_owned()
        } else {
            format!("known: {}", known.join(", "))
        };
        // Not `${NAME}` itself: the call's record registers what the agent typed, the
        // placeholder included, as typed text, and would mask it in this very message.
        format!(
            "the variable {name} has no value: set {}{name} in cdp-relay's environment or {name}=… in its --var-file ({known}); nothing was sent to the browser",
            vars::ENV_PREFIX
        )
    }

    /// Registers one `recordAs` name for its text, or says why not.
    fn record(&self, h: Option<&PipelineHandle>, named: &record_as::Named) -> Result<(), String> {
        let Some(name) = named.name.as_deref() else {
            return Err(
                "recordAs must be a string: the name for the text typed beside it (e.g. ACCOUNT_NUMBER); nothing was sent to the browser"
                    .into(),
            );
        };
        let text = match &named.text {
            Ok(text) => text,
            Err(0) => {
                return Err("recordAs names the text typed beside it (a value or text argument), and there is none; nothing was sent to the browser".into())
            }
            Err(n) => {
                return Err(format!("recordAs names one text, and {n} are typed beside it: name each in a call of its own, or type variables (${{NAME}}); nothing was sent to the browser"))
            }
        };
        if let Err(e) = cdp_sanitize::Sanitizer::check_secret(name, text) {
            if let (Some(h), true) = (h, cdp_sanitize::check_secret_name(name).is_err()) {
                // A name that breaks the rule may be a value written in the wrong place.
                h.sanitizer().register_typed(name);
            }
            return Err(format!(
                "recordAs was not registered: {e}; nothing was sent to the browser"
            ));
        }
        if let Some(v) = self.vars.get(name) {
            if v.value.expose() != text {
                return Err(format!("recordAs {name} is the name of a variable: write ${{{name}}} to type it, or choose another name; nothing was sent to the browser"));
            }
        }
        if let Some(h) = h {
            if let Err(e) = h.register_secret(name, text) {
                return Err(format!(
                    "recordAs was not registered: {e}; nothing was sent to the browser"
                ));
            }
            register(h, name, text);
        }
        match self.rewriter.add(name, text) {
            Added::New => {
                self.recorded()
                    .entry(name.to_owned())
                    .or_insert_with(|| cdp_capture::SecretValue::new(text.to_owned()));
            }
            // The first name keeps it; the evidence does the same.
            Added::Known(_) | Added::TooShort => {}
        }
        Ok(())
    }

    /// A value the agent registered itself (`evidence_register_secret`), already a secret of the
    /// run: from now on its results show it as `${NAME}`, in every spelling, as a `recordAs`
    /// text's. The agent holds it, as it holds a `recordAs` text; it should not read it back.
    pub(crate) fn registered(&self, h: Option<&PipelineHandle>, name: &str, value: &str) {
        if let Some(h) = h {
            register(h, name, value);
        }
        if self.rewriter.add(name, value) == Added::New {
            self.recorded()
                .entry(name.to_owned())
                .or_insert_with(|| cdp_capture::SecretValue::new(value.to_owned()));
        }
    }

    /// Replaces the pictures of a result that may show a registered value (see the module docs).
    pub(crate) async fn withhold_pictures(
        &self,
        h: Option<&PipelineHandle>,
        result: &mut CallToolResult,
    ) {
        if !result.content.iter().any(is_picture) {
            return;
        }
        let why = match h {
            Some(h) => {
                if !self.rewriter.is_empty() {
                    // Typing before the picture is over: bursts end, and are named.
                    h.tap().typing_over(None);
                }
                let caught_up =
                    tokio::time::timeout(PICTURE_WAIT, h.order().caught_up()).await.is_ok();
                if h.pages().named_value_shown() {
                    Some("a page shows a value typed from a variable, a recordAs name or a registered secret in a field that does not mask it, since its last navigation")
                } else if !caught_up && self.typed.load(Ordering::Relaxed) {
                    Some("the browser evidence is behind, so cdp-relay cannot tell whether a page shows a value typed from a variable or a recordAs name")
                } else {
                    None
                }
            }
            None if self.typed.load(Ordering::Relaxed) => Some(
                "evidence is off, so cdp-relay cannot tell whether a page still shows a value typed from a variable or a recordAs name",
            ),
            None => None,
        };
        let Some(why) = why else {
            return;
        };
        for item in result.content.iter_mut().filter(|c| is_picture(c)) {
            *item = ContentBlock::text(format!(
                "[cdp-relay withheld this image: {why}. Pictures come back once the page has navigated (reload it, or go on to the next page).]"
            ));
        }
    }
}

/// Whether a string under argument `name` is typed (where placeholders are resolved).
fn args_types(name: &str) -> bool {
    super::args::types_text(name)
}

fn short(arg: &str) -> String {
    arg.chars().take(64).collect()
}

fn bad_name(arg: &str) -> String {
    format!(
        "`{}` holds ${{…}} with a name that is not a variable's: names are [A-Z_][A-Z0-9_]*, at most {} characters, not starting with TYPED_; nothing was sent to the browser",
        short(arg),
        cdp_sanitize::MAX_SECRET_NAME_CHARS
    )
}

fn embedded(arg: &str, name: &str) -> String {
    format!(
        "${{{name}}} is part of a longer text in `{}`: a variable must be the whole value (type the rest in a call of its own); nothing was sent to the browser",
        short(arg)
    )
}

fn not_typed(arg: &str, name: &str) -> String {
    format!(
        "${{{name}}} is in `{}`, which is not typed text: variables are resolved only as the whole value of a typing argument (fill's value, type_text's text, a form field's value); nothing was sent to the browser",
        short(arg)
    )
}

/// Registers `value` under `name` with the run's sanitizer, and its spellings the sanitizer
/// does not find on its own (it finds a literal as is, JSON-escaped and form-encoded).
fn register(h: &PipelineHandle, name: &str, value: &str) {
    let s = h.sanitizer();
    let mut spellings = vec![value.to_owned()];
    spellings.extend(
        super::spellings::spellings(value)
            .into_iter()
            // Padded base64 begins with the unpadded form: one secret of the run's 256 is enough.
            .filter(|sp| !sp.ends_with('=')),
    );
    for (i, sp) in spellings.iter().enumerate() {
        match s.register_secret(name, sp) {
            Ok(_) => {}
            // Too short is said once, when the gateway starts (`Inputs::new`).
            Err(cdp_sanitize::SecretError::TooShort { .. }) => return,
            Err(e) => {
                if i == 0 {
                    tracing::warn!("mcp: {name} is not masked in the evidence: {e}");
                } else {
                    tracing::warn!(
                        "mcp: some spellings of {name} (HTML, base64, …) are not masked in the evidence: {e}"
                    );
                }
                return;
            }
        }
    }
}

fn is_picture(c: &ContentBlock) -> bool {
    match c {
        ContentBlock::Image(_) => true,
        ContentBlock::Resource(r) => matches!(
            &r.resource,
            ResourceContents::BlobResourceContents { mime_type: Some(m), .. } if m.starts_with("image/")
        ),
        _ => false,
    }
}

/// The gateway's hook before a call of the wrapped server is forwarded: placeholders resolved,
/// `recordAs` taken out and registered. A refusal is recorded here and returned as the call's
/// result.
pub(crate) fn before_call(
    inputs: &Inputs,
    recorder: &Arc<Recorder>,
    server: &str,
    mut request: CallToolRequestParams,
) -> Result<CallToolRequestParams, Box<CallToolResult>> {
    let Some(args) = request.arguments.as_mut() else {
        return Ok(request);
    };
    let original = args.clone();
    match inputs.prepare(recorder.handle(), &request.name, args) {
        Ok(()) => Ok(request),
        Err(why) => {
            recorder
                .begin(server, &request.name, Some(&original))
                .end(Outcome::error(why.clone()));
            Err(Box::new(CallToolResult::error(vec![ContentBlock::text(
                why,
            )])))
        }
    }
}

/// The gateway's hook once the wrapped server answered a call: pictures that may show a
/// registered value are withheld.
pub(crate) async fn after_answer(
    inputs: &Inputs,
    recorder: &Recorder,
    result: &mut CallToolResult,
) {
    inputs.withhold_pictures(recorder.handle(), result).await;
}

/// The kinds of field each variable was typed into, from the run's typing steps.
pub(crate) fn typed_into(dir: &cdp_evidence::RunDir) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let manifest = dir.manifest().ok().flatten();
    let Ok(Some(journal)) = dir.journal(manifest.as_ref()) else {
        return out;
    };
    for r in &journal.records {
        let cdp_evidence::StoredPayload::Action(a) = r.typed_payload() else {
            continue;
        };
        let Some(input) = a.input else {
            continue;
        };
        let (Some(var), Some(kind)) = (input.variable, input.input_type) else {
            continue;
        };
        let kinds = out.entry(var).or_default();
        let kind = kind.as_str().to_owned();
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    out
}

#[cfg(test)]
mod tests;
