//! [`TypedEcho`]: echo protection for text while it is being typed.
//!
//! A page that logs a field on every `input` event (`console.log('live ' + el.value)`) echoes
//! each prefix of what is typed: `live T`, `live Ty`, … `live TypeSecretBBB2`. A typing burst
//! therefore registers its literal as soon as it has [`MIN_TYPED_CHARS`] non-whitespace
//! characters and extends it with every keystroke, under one `TYPED_<n>` name; the registry
//! masks any prefix of it of at least that many non-whitespace characters.
//!
//! Holds no more than the registry needs: the characters typed before the minimum is reached,
//! then only the echo's index and name. Never prints, serializes or returns the literal.

use crate::secrets::{Registry, MIN_TYPED_CHARS, TYPED_MAX_BYTES};
use std::fmt;
use std::sync::{PoisonError, RwLock, Weak};

/// One typing burst's literal, growing keystroke by keystroke; see [`Sanitizer::typed_echo`].
///
/// [`TypedEcho::extend`] is the whole API a caller needs: call it with each inserted text.
/// The echo belongs to the sanitizer that made it (it cannot be extended into another one) and
/// does not keep it alive: once the sanitizer is dropped, extending does nothing. Dropping the
/// echo ends the burst; what was registered stays protected for the rest of the run.
///
/// `Debug` shows the name only; the type is neither `Clone` nor `Serialize`.
///
/// [`Sanitizer::typed_echo`]: crate::Sanitizer::typed_echo
pub struct TypedEcho {
    registry: Weak<RwLock<Registry>>,
    state: State,
}

enum State {
    /// Fewer than [`MIN_TYPED_CHARS`] non-whitespace characters so far. Leading whitespace is
    /// not kept: a prefix is protected from the first character that says something.
    Pending {
        typed: String,
        chars: usize,
        /// The name [`TypedEcho::variable`] handed out before the literal was long enough.
        reserved: Option<String>,
    },
    /// Registered as echo `echo` of the registry, under `name`.
    Registered { echo: usize, name: String },
}

impl TypedEcho {
    pub(crate) fn new(registry: Weak<RwLock<Registry>>) -> TypedEcho {
        TypedEcho {
            registry,
            state: State::Pending {
                typed: String::new(),
                chars: 0,
                reserved: None,
            },
        }
    }

    /// Adds what was just typed (`Input.insertText`, a key event's `text`, …). From the
    /// keystroke that brings the literal to [`MIN_TYPED_CHARS`] non-whitespace characters on,
    /// every echo of a prefix of it with at least that many reads `${TYPED_<n>}`. Characters
    /// beyond [`TYPED_MAX_BYTES`] bytes are not added.
    pub fn extend(&mut self, more: &str) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        match &mut self.state {
            State::Registered { echo, .. } => {
                let mut registry = registry.write().unwrap_or_else(PoisonError::into_inner);
                registry.extend_echo(*echo, more);
            }
            State::Pending {
                typed,
                chars,
                reserved,
            } => {
                let more = if typed.is_empty() {
                    more.trim_start()
                } else {
                    more
                };
                let room = TYPED_MAX_BYTES.saturating_sub(typed.len());
                let mut end = more.len().min(room);
                while !more.is_char_boundary(end) {
                    end -= 1;
                }
                let more = &more[..end];
                typed.push_str(more);
                *chars += more.chars().filter(|c| !c.is_whitespace()).count();
                if *chars < MIN_TYPED_CHARS {
                    return;
                }
                let mut registry = registry.write().unwrap_or_else(PoisonError::into_inner);
                if let Some((echo, name)) = registry.add_echo(typed, reserved.take()) {
                    self.state = State::Registered { echo, name };
                }
            }
        }
    }

    /// The `TYPED_<n>` name echoes of this literal read as, once it is registered.
    pub fn name(&self) -> Option<&str> {
        match &self.state {
            State::Pending { .. } => None,
            State::Registered { name, .. } => Some(name),
        }
    }

    /// The `TYPED_<n>` that stands for this literal in a typing step (`payload.input.variable`):
    /// its name once registered; a literal still too short to protect gets a number of its own,
    /// kept if it grows long enough later. `None` once the sanitizer is gone.
    pub fn variable(&mut self) -> Option<String> {
        match &mut self.state {
            State::Registered { name, .. } => Some(name.clone()),
            State::Pending { reserved, .. } => {
                if reserved.is_none() {
                    let registry = self.registry.upgrade()?;
                    let mut registry = registry.write().unwrap_or_else(PoisonError::into_inner);
                    *reserved = Some(registry.reserve_typed());
                }
                reserved.clone()
            }
        }
    }
}

impl fmt::Debug for TypedEcho {
    /// The name only, never the characters (nor how many there are).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedEcho")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use crate::Sanitizer;

    #[test]
    fn a_typing_step_s_variable_is_the_name_its_echoes_read_as() {
        let s = Sanitizer::new();
        let mut long = s.typed_echo();
        long.extend("Secret");
        assert_eq!(long.variable().as_deref(), Some("TYPED_1"));
        assert_eq!(s.text("x Secret").as_str(), "x ${TYPED_1}");
        // Too short to be masked: a number of its own, asked twice the same, and kept when the
        // text grows long enough to be protected.
        let mut short = s.typed_echo();
        short.extend("ab");
        assert_eq!(short.variable().as_deref(), Some("TYPED_2"));
        assert_eq!(short.variable().as_deref(), Some("TYPED_2"));
        assert_eq!(s.text("x ab").as_str(), "x ab");
        let mut other = s.typed_echo();
        other.extend("third");
        assert_eq!(other.name(), Some("TYPED_3"));
        short.extend("cd");
        assert_eq!(short.name(), Some("TYPED_2"));
        assert_eq!(s.text("x abcd").as_str(), "x ${TYPED_2}");
        drop(s);
        assert_eq!(s_gone_variable(), None);
    }

    fn s_gone_variable() -> Option<String> {
        let s = Sanitizer::new();
        let mut e = s.typed_echo();
        drop(s);
        e.variable()
    }
}
