//! The error every configuration check returns: the broker.conf key and
//! what is wrong with its value. Its own module so that the parsers of
//! single values (delay levels, ...) and the store config share it without
//! importing each other.

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config key `{key}`: {reason}")]
pub struct ConfigError {
    /// The broker.conf key.
    pub key: std::borrow::Cow<'static, str>,
    /// What is wrong with its value.
    pub reason: String,
}

impl ConfigError {
    /// An error for `key`.
    pub fn new(key: impl Into<std::borrow::Cow<'static, str>>, reason: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            reason: reason.into(),
        }
    }
}
