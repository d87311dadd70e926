//! Connect strings: `host:port[,host:port...][/chroot]`, with `tcp://` or `tcp+tls://` per
//! host. Parsed here for the builder, the client's chroot and the reachability diagnosis.

use crate::error::{Error, Result};
use crate::path;

/// The hosts of a connect string, without chroot or scheme prefixes.
pub(crate) fn hosts(connect_string: &str) -> Vec<String> {
    let (hosts, _) = split_chroot(connect_string.trim());
    hosts
        .split(',')
        .map(|h| h.trim())
        .map(|h| h.strip_prefix("tcp+tls://").or_else(|| h.strip_prefix("tcp://")).unwrap_or(h))
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Splits a connect string into its hosts and its chroot (`""` when there is none): the chroot
/// starts at the first '/' that is not part of a "scheme://".
pub(crate) fn split_chroot(connect_string: &str) -> (&str, &str) {
    let mut search_from = 0;
    while let Some(i) = connect_string[search_from..].find('/') {
        let at = search_from + i;
        if connect_string[at..].starts_with("//") && connect_string[..at].ends_with(':') {
            search_from = at + 2;
            continue;
        }
        return connect_string.split_at(at);
    }
    (connect_string, "")
}

/// Checks `host:port[,host:port...][/chroot]`, with optional `tcp://` or `tcp+tls://` per host.
pub(crate) fn validate(connect_string: &str) -> Result<()> {
    let invalid =
        |reason: String| Error::InvalidConnectString { connect_string: connect_string.to_string(), reason };
    let trimmed = connect_string.trim();
    if trimmed.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    let (hosts, chroot) = split_chroot(trimmed);
    if !chroot.is_empty() {
        path::check_path(chroot).map_err(|e| invalid(format!("chroot {chroot:?}: {e}")))?;
    }
    for host in hosts.split(',') {
        let host = host.trim();
        let host = host.strip_prefix("tcp+tls://").or_else(|| host.strip_prefix("tcp://")).unwrap_or(host);
        if host.is_empty() {
            return Err(invalid("an empty host".into()));
        }
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !name.is_empty() => (name, port),
            _ => return Err(invalid(format!("{host:?} is not host:port"))),
        };
        if name.contains(['/', ' ']) {
            return Err(invalid(format!("bad host name {name:?}")));
        }
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err(invalid(format!("bad port {port:?} in {host:?}"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_drop_chroot_and_schemes() {
        assert_eq!(hosts("tcp+tls://a:1, b:2/chroot"), vec!["a:1", "b:2"]);
        assert_eq!(hosts("[::1]:2181"), vec!["[::1]:2181"]);
        assert_eq!(hosts("tcp://a:1/x/y"), vec!["a:1"]);
    }

    #[test]
    fn connect_strings() {
        for good in
            ["127.0.0.1:2181", "a:1,b:2/chroot/x", "tcp://a:1,tcp+tls://b:2", " a:1 , b:2 ", "[::1]:2181"]
        {
            assert!(validate(good).is_ok(), "{good}");
        }
        for bad in ["", "localhost", "a:0", "a:99999", "a:1,", ":2181", "a:1/chroot/", "a:1//x", "a:x"] {
            assert!(matches!(validate(bad), Err(Error::InvalidConnectString { .. })), "{bad}");
        }
    }
}
