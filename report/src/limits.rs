//! How much of a journal string, or of a list, the report shows. Every string from a run is cut
//! to one of these lengths (in characters) by [`crate::text`] before it reaches the model; the
//! cut is always said (`…[+N chars]`). The sizes keep one entry readable on one screen and a
//! hostile run from growing the report, while leaving what a reader needs whole in practice.

/// A URL: long enough for a path with a query a reader can recognise, short enough that a
/// data: or tracking URL does not fill the card.
pub(crate) const MAX_URL: usize = 300;
/// A page title: about two lines of a card.
pub(crate) const MAX_TITLE: usize = 140;
/// An identifier-like word (a kind, a method, a source, a run id is two of these).
pub(crate) const MAX_WORD: usize = 80;
/// A console message: a stack trace's first frames, scrolled inside its box.
pub(crate) const MAX_MESSAGE: usize = 2000;
/// An error text (a network error, a step's error): a few lines.
pub(crate) const MAX_ERROR: usize = 600;
/// One value of a record shown field by field.
pub(crate) const MAX_FIELD: usize = 240;
/// Fields a generic payload is flattened into; past them "more fields not shown".
pub(crate) const MAX_FIELDS: usize = 24;
/// A key of a flattened payload, or a tool argument's name: long keys are not identifiers.
pub(crate) const MAX_KEY: usize = 40;
/// A short status-like word: an outcome, an input type, a legacy status, a JSON type.
pub(crate) const MAX_STATUS_WORD: usize = 24;
/// A mouse button's name (`left`, `middle`, …).
pub(crate) const MAX_BUTTON: usize = 12;
/// A verdict's reason word (`landed`, `value-mismatch`, …).
pub(crate) const MAX_REASON: usize = 40;
/// A verdict's note: one sentence for people.
pub(crate) const MAX_VERDICT_NOTE: usize = 200;
/// A key press's key name (`Enter`, `Shift+Tab`, …).
pub(crate) const MAX_KEY_NAME: usize = 40;
/// An HTTP method: the longest standard one is 7 characters.
pub(crate) const MAX_HTTP_METHOD: usize = 16;
/// A resource type (`Document`, `XHR`, `Fetch`, …).
pub(crate) const MAX_RESOURCE_TYPE: usize = 32;
/// Why the relay withheld a frame: one short sentence.
pub(crate) const MAX_WITHHELD: usize = 120;

/// Kinds listed in "records by kind": a producer may invent kinds, and forty is more than the
/// format and its known producers write.
pub(crate) const MAX_KINDS_SHOWN: usize = 40;
/// Redaction rules, and registered secret names, listed with their counts: a policy has a few
/// dozen rules at most; the total is always shown.
pub(crate) const MAX_REDACTION_NAMES: usize = 100;
/// A redaction rule's or a secret's name.
pub(crate) const MAX_REDACTION_NAME: usize = 60;

/// A failure's URL in the jump list, which must stay one line at 1280 px.
pub(crate) const JUMP_URL: usize = 120;
/// A console message's first line in the jump list.
pub(crate) const JUMP_MESSAGE: usize = 160;
/// The first field of an unreadable payload in the jump list.
pub(crate) const JUMP_FIELD: usize = 100;
