//! Connect strings: `host[:port][,host[:port]...][/chroot]`, with `tcp://` or `tcp+tls://` per
//! host; a host without a port is port 2181, as kazoo and zkCli.sh take it. Parsed here for the
//! builder, the client's chroot and the reachability diagnosis.

use crate::error::{Error, Result};
use crate::path;

/// The port of a host given without one (ZooKeeper's, as kazoo and zkCli.sh assume).
pub(crate) const DEFAULT_PORT: u16 = 2181;

/// The hosts of a connect string as `host:port` (2181 where none is given), without chroot or
/// scheme prefixes.
pub(crate) fn hosts(connect_string: &str) -> Vec<String> {
    let (hosts, _) = split_chroot(connect_string.trim());
    hosts.split(',').map(without_scheme).filter(|h| !h.is_empty()).map(with_port).collect()
}

/// A host of the list, trimmed, without its `tcp://` or `tcp+tls://`.
fn without_scheme(host: &str) -> &str {
    let host = host.trim();
    host.strip_prefix("tcp+tls://").or_else(|| host.strip_prefix("tcp://")).unwrap_or(host)
}

/// `host` as `host:port`: [`DEFAULT_PORT`] when it names none (`zk1`, `[::1]`).
fn with_port(host: &str) -> String {
    match has_port(host) {
        true => host.to_owned(),
        false => format!("{host}:{DEFAULT_PORT}"),
    }
}

/// Does `host` end in a port? A bracketed IPv6 address has one only after its `]`.
fn has_port(host: &str) -> bool {
    match host.rfind(']') {
        Some(end) => host[end + 1..].starts_with(':'),
        None => host.contains(':'),
    }
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

/// Checks `host[:port][,host[:port]...][/chroot]`, with optional `tcp://` or `tcp+tls://` per
/// host.
pub(crate) fn validate(connect_string: &str) -> Result<()> {
    let invalid =
        |reason: String| Error::InvalidConnectString { connect_string: connect_string.to_string(), reason };
    let trimmed = connect_string.trim();
    if trimmed.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    let (hosts, chroot) = split_chroot(trimmed);
    if hosts.contains(';') {
        return Err(invalid(format!(
            "hosts are separated by commas, not ';': {}",
            hosts.split(';').map(str::trim).collect::<Vec<_>>().join(",")
        )));
    }
    if !chroot.is_empty() {
        path::check_path(chroot).map_err(|e| invalid(format!("chroot {chroot:?}: {e}")))?;
    }
    for host in hosts.split(',') {
        let host = without_scheme(host);
        if host.is_empty() {
            return Err(invalid("an empty host".into()));
        }
        if host.starts_with('[') && !host.contains(']') {
            return Err(invalid(format!("{host:?}: an IPv6 address without its closing ']'")));
        }
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if has_port(host) => (name, Some(port)),
            _ => (host, None),
        };
        if name.is_empty() {
            return Err(invalid(format!("{host:?} is not host:port")));
        }
        if name.contains(['/', ' ']) {
            return Err(invalid(format!("bad host name {name:?}")));
        }
        match port.map(str::parse::<u16>) {
            None | Some(Ok(1..)) => {}
            Some(_) => return Err(invalid(format!("bad port {:?} in {host:?}", port.unwrap_or_default()))),
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
        for bad in ["", "a:0", "a:99999", "a:1,", ":2181", "a:1/chroot/", "a:1//x", "a:x", "[::1"] {
            assert!(matches!(validate(bad), Err(Error::InvalidConnectString { .. })), "{bad}");
        }
    }

    /// kazoo and zkCli.sh take a bare host as port 2181; so does zkr (issue 44 item 8).
    #[test]
    fn a_bare_host_is_port_2181() {
        for good in ["localhost", "zk1,zk2:2182/app", "[::1]", "tcp://zk1"] {
            assert!(validate(good).is_ok(), "{good}");
        }
        assert_eq!(hosts("zk1, zk2:2182/app"), vec!["zk1:2181", "zk2:2182"]);
        assert_eq!(hosts("[::1],tcp+tls://zk3"), vec!["[::1]:2181", "zk3:2181"]);
    }

    /// `a:2181;b:2182` resolved as one host named `a:2181;b` (issue 44 item 8): the separator is
    /// named instead.
    #[test]
    fn a_semicolon_is_told_to_be_a_comma() {
        let Err(Error::InvalidConnectString { reason, .. }) = validate("a:2181;b:2182") else {
            panic!("a semicolon is refused")
        };
        assert!(reason.contains("comma") && reason.contains("a:2181,b:2182"), "{reason}");
    }
}
