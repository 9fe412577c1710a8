//! Errors of the sanitize crate.

/// Why a secret could not be registered. Messages name the secret, never its literal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The name is not `[A-Z_][A-Z0-9_]*` (placeholders must read unambiguously as `${NAME}`).
    /// The name is not repeated: a caller who swapped name and value passed the secret as it.
    #[error("invalid secret name ({chars} characters): names must match [A-Z_][A-Z0-9_]*")]
    InvalidName {
        /// Characters in the rejected name.
        chars: usize,
    },
    /// The name is longer than `max` characters
    /// ([`MAX_SECRET_NAME_CHARS`](crate::MAX_SECRET_NAME_CHARS)): every masked place reads
    /// `${NAME}`, so a long name would wipe the text around it.
    #[error("secret name is {chars} characters; at most {max} are allowed")]
    NameTooLong {
        /// Characters in the rejected name.
        chars: usize,
        /// The most allowed.
        max: usize,
    },
    /// The name is one the relay generates itself (`TYPED_<n>` for typed text).
    #[error(
        "secret names starting with {prefix} are the relay's own (typed text); choose another name"
    )]
    ReservedName {
        /// The reserved prefix.
        prefix: &'static str,
    },
    /// The literal has fewer than `min` non-whitespace characters
    /// ([`MIN_SECRET_CHARS`](crate::MIN_SECRET_CHARS)): masking it would mask ordinary words,
    /// and no rule may be switched off by it.
    #[error("secret {name} is too short (at least {min} non-whitespace characters are needed)")]
    TooShort {
        /// The secret's name (valid, so it cannot carry the literal).
        name: String,
        /// The minimum number of non-whitespace characters.
        min: usize,
    },
    /// The literal is longer than `max` bytes ([`MAX_SECRET_BYTES`](crate::MAX_SECRET_BYTES)).
    #[error("secret {name} is {bytes} bytes; at most {max} bytes can be registered")]
    TooLong {
        /// The secret's name.
        name: String,
        /// Its length in bytes.
        bytes: usize,
        /// The most allowed.
        max: usize,
    },
    /// `max` explicit secrets are registered already ([`MAX_SECRETS`](crate::MAX_SECRETS)).
    #[error(
        "secret {name} is not registered: this run holds {max} secrets already, the most it can"
    )]
    TooMany {
        /// The secret's name.
        name: String,
        /// The most a run holds.
        max: usize,
    },
}
