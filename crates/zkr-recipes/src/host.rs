//! This machine's host name, for default identities (snowflake workers, partition members).

/// The host name, when the OS gives one that is valid UTF-8.
pub(crate) fn host_name() -> Option<String> {
    gethostname::gethostname().into_string().ok().filter(|h| !h.is_empty())
}
