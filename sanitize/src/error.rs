//! Errors of the sanitize crate.

/// Why a secret could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The name is not `[A-Z_][A-Z0-9_]*` (placeholders must read unambiguously as `${NAME}`).
    #[error("invalid secret name {name:?}: names must match [A-Z_][A-Z0-9_]*")]
    InvalidName {
        /// The rejected name (at most 64 characters of it).
        name: String,
    },
}
