//! The first pass over a run's events: what needs a name in the spec (each page, each origin,
//! each input) and what one step tells about another (the page a step opened, the navigation a
//! click caused). The second pass (`playwright.rs`) writes the steps with these names.

use super::js::is_variable_name;
use super::read::{origin, Event, Target, What};
use std::collections::{BTreeMap, BTreeSet};

/// How far past a click the export looks for the navigation it caused.
const NAVIGATION_LOOKAHEAD: usize = 2_000;
/// The names the relay gives typed text that is no registered secret.
const TYPED_PREFIX: &str = "TYPED_";
/// The names of file inputs (the run keeps no file names).
const FILE_PREFIX: &str = "FILE_";

/// What an input variable stands for.
#[derive(Debug, Default)]
pub(crate) struct InputFacts {
    /// Steps that read it.
    pub steps: Vec<usize>,
    /// Characters typed (a typed input).
    pub chars: BTreeSet<u64>,
    /// Field kinds typed into (a typed input).
    pub input_types: BTreeSet<String>,
    /// Files chosen (a file input), when the run says.
    pub files: BTreeSet<u64>,
    /// A file input: its variable names paths.
    pub is_file: bool,
    /// Some step reading it can be replayed.
    pub replayable: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Page handle → variable.
    pub pages: BTreeMap<String, String>,
    /// Event index of a `Target.createTarget` → the variable of the page it opened (empty: the
    /// run never used it).
    pub opened: BTreeMap<usize, String>,
    /// Event index of a step → the variable of the popup it opened.
    pub popups: BTreeMap<usize, String>,
    /// Event index → a page that shows up there unannounced (variable, its URL).
    pub unannounced: BTreeMap<usize, (String, Option<String>)>,
    /// Event index of a click or key press → the URL (origin + path) it navigated to.
    pub navigations: BTreeMap<usize, String>,
    /// Event index → step number.
    pub numbers: BTreeMap<usize, usize>,
    /// Event index of a typing step or file choice → its input's name.
    pub input_names: BTreeMap<usize, String>,
    pub inputs: BTreeMap<String, InputFacts>,
    /// Origins in order of first use, with their variables.
    pub origins: Vec<(String, String)>,
    pub uses_context: bool,
}

/// Origin and path of a URL (the run keeps no query or fragment of page URLs).
pub(crate) fn origin_path(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// A URL the spec can go to or wait for: `http(s)` with nothing redacted in it.
pub(crate) fn replayable_url(url: &str) -> bool {
    origin(url).is_some() && !url.contains("[redacted") && !url.contains("${")
}

/// True for a name the run may give an input: a registered secret's (the relay's rule) or a
/// `TYPED_<n>`.
fn is_run_name(name: &str) -> bool {
    let typed = name
        .strip_prefix(TYPED_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    is_variable_name(name) && (typed || cdp_sanitize::check_secret_name(name).is_ok())
}

impl Plan {
    pub(crate) fn new(events: &[Event]) -> Plan {
        let mut plan = Plan::default();
        for (index, event) in events.iter().enumerate() {
            if event.what.is_step() {
                plan.numbers.insert(index, plan.numbers.len() + 1);
            }
        }
        plan.place_pages(events);
        plan.find_navigations(events);
        plan.name_inputs(events);
        plan.name_origins(events);
        plan
    }

    /// Gives each page the run acted on a variable, and says where it came from: a page the
    /// run opened, a popup of a step on its opener, or one that shows up unannounced.
    fn place_pages(&mut self, events: &[Event]) {
        let mut unclaimed_opens: Vec<usize> = Vec::new();
        let mut last_step_on: BTreeMap<String, usize> = BTreeMap::new();
        let mut current: Option<String> = None;
        for (i, e) in events.iter().enumerate() {
            if !e.what.is_step() {
                continue;
            }
            if let What::OpenPage { .. } = e.what {
                unclaimed_opens.push(i);
                continue;
            }
            let Some(handle) = e.page.clone().or_else(|| current.clone()) else {
                continue;
            };
            if !self.pages.contains_key(&handle) {
                let first = self.pages.is_empty();
                let var = if first {
                    "page".to_owned()
                } else {
                    format!("page{}", self.pages.len())
                };
                self.pages.insert(handle.clone(), var.clone());
                let opener_step = e.opener.as_ref().and_then(|o| last_step_on.get(o)).copied();
                if !unclaimed_opens.is_empty() {
                    let open = unclaimed_opens.remove(0);
                    self.opened.insert(open, var);
                } else if first {
                    // The test's own page.
                } else if let Some(step) = opener_step {
                    self.popups.insert(step, var);
                } else {
                    self.uses_context = true;
                    let url = e.page_url.clone().filter(|u| replayable_url(u));
                    self.unannounced.insert(i, (var, url));
                }
            }
            last_step_on.insert(handle.clone(), i);
            current = Some(handle);
        }
        for &open in &unclaimed_opens {
            self.opened.insert(open, String::new());
        }
        self.uses_context |= self.opened.values().any(|v| v != "page");
    }

    fn find_navigations(&mut self, events: &[Event]) {
        for (i, e) in events.iter().enumerate() {
            if let What::Click { .. } | What::Press { .. } = e.what {
                if let Some(url) = navigated(events, i) {
                    self.navigations.insert(i, url);
                }
            }
        }
    }

    /// Names each typing step's and file choice's input: the run's name for typed text (a
    /// registered secret's, else its `TYPED_<n>`), a `TYPED_<n>` of the export's own when the
    /// run gives none it may use, and `FILE_<n>` for a file input.
    fn name_inputs(&mut self, events: &[Event]) {
        let recorded: BTreeSet<String> = events
            .iter()
            .filter_map(|e| match &e.what {
                What::Type {
                    variable: Some(v), ..
                } if is_run_name(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        let fresh = |prefix: &str, n: &mut usize| loop {
            *n += 1;
            let name = format!("{prefix}{n}");
            if !recorded.contains(&name) {
                break name;
            }
        };
        let (mut typed, mut files) = (0, 0);
        for (i, e) in events.iter().enumerate() {
            let (name, target) = match &e.what {
                What::Type {
                    variable, target, ..
                } => {
                    let name = match variable {
                        Some(v) if is_run_name(v) => v.clone(),
                        _ => fresh(TYPED_PREFIX, &mut typed),
                    };
                    (name, target)
                }
                What::Files { target, .. } => (fresh(FILE_PREFIX, &mut files), target),
                _ => continue,
            };
            let facts = self.inputs.entry(name.clone()).or_default();
            facts.steps.push(self.numbers[&i]);
            facts.replayable |= matches!(target, Target::Element { .. });
            match &e.what {
                What::Type {
                    chars, input_type, ..
                } => {
                    facts.chars.insert(*chars);
                    let kind = input_type.clone().unwrap_or_else(|| "unknown".to_owned());
                    facts.input_types.insert(kind);
                }
                What::Files { count, .. } => {
                    facts.is_file = true;
                    facts.files.extend(count);
                }
                _ => {}
            }
            self.input_names.insert(i, name);
        }
    }

    /// A variable per origin, in order of first use.
    fn name_origins(&mut self, events: &[Event]) {
        let mut origins: Vec<String> = Vec::new();
        let mut see = |url: &str| {
            if let Some(seen) = origin(url).filter(|_| replayable_url(url)) {
                if !origins.iter().any(|known| known == seen) {
                    origins.push(seen.to_owned());
                }
            }
        };
        for (i, e) in events.iter().enumerate() {
            match &e.what {
                What::Navigate { url: Some(u), .. } | What::OpenPage { url: Some(u) } => see(u),
                _ => {}
            }
            if let Some((_, Some(u))) = self.unannounced.get(&i) {
                see(u);
            }
            if let Some(u) = self.navigations.get(&i) {
                see(u);
            }
        }
        for (position, origin) in origins.into_iter().enumerate() {
            let var = if position == 0 {
                "BASE_URL".to_owned()
            } else {
                format!("BASE_URL_{}", position + 1)
            };
            self.origins.push((origin, var));
        }
    }

    /// The variable of the page event `e` happened on, else the page acted on last.
    pub(crate) fn page_var(&self, e: &Event, current: &str) -> String {
        e.page
            .as_ref()
            .and_then(|h| self.pages.get(h))
            .cloned()
            .unwrap_or_else(|| current.to_owned())
    }

    /// `url` as an expression: its origin's variable plus the path, or a literal.
    pub(crate) fn url_expr(&self, url: &str) -> String {
        if let Some(url_origin) = origin(url) {
            if let Some((_, var)) = self.origins.iter().find(|(known, _)| known == url_origin) {
                let rest = &url[url_origin.len()..];
                return if rest.is_empty() {
                    var.clone()
                } else {
                    format!("{var} + {}", super::js::string(rest))
                };
            }
        }
        super::js::string(url)
    }
}

/// The URL (origin + path) the page of the click or key press at `i` went to before its next
/// step, when that differs from where it was.
fn navigated(events: &[Event], i: usize) -> Option<String> {
    let step = &events[i];
    let page = step.page.as_ref()?;
    let before = origin_path(step.page_url.as_deref()?);
    let mut last = None;
    for e in events.iter().skip(i + 1).take(NAVIGATION_LOOKAHEAD) {
        if e.page.as_ref() != Some(page) {
            continue;
        }
        if let Some(u) = &e.page_url {
            last = Some(u.as_str());
        }
        if e.what.is_step() {
            break;
        }
    }
    let after = origin_path(last?);
    (after != before && replayable_url(after)).then(|| after.to_owned())
}
