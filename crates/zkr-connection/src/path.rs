//! ZooKeeper path validation and manipulation.
//!
//! The rules are ZooKeeper's own (`PathUtils.validatePath`): absolute, no trailing slash (except
//! `/`), no empty, `.` or `..` segments, no NUL, and none of the characters the server rejects
//! (`U+0001`–`U+001F`, `U+007F`–`U+009F`, `U+E000`–`U+F8FF`, `U+FFF0`–`U+FFFF`).

pub use crate::error::PathError;
use crate::error::{Error, Result};

/// The most data zkr writes into one node: ZooKeeper's default `jute.maxbuffer` is `0xfffff`
/// bytes for a whole packet, and 1 KiB of it is left for the path and headers.
pub const MAX_DATA_LEN: usize = 0xfffff - 1024;

fn is_invalid_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

/// Checks a path by ZooKeeper's rules.
///
/// # Errors
/// The [`PathError`] that says what is wrong.
///
/// # Examples
///
/// ```
/// use zkr_connection::path::{check_path, PathError};
/// assert!(check_path("/locks/orders").is_ok());
/// assert_eq!(check_path("locks"), Err(PathError::NotAbsolute));
/// assert_eq!(check_path("/a//b"), Err(PathError::EmptySegment(3)));
/// ```
pub fn check_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(PathError::TrailingSlash);
    }
    check_chars(path, 0)?;
    let mut offset = 1;
    for segment in path[1..].split('/') {
        match segment {
            "" => return Err(PathError::EmptySegment(offset)),
            "." => return Err(PathError::RelativeSegment(".")),
            ".." => return Err(PathError::RelativeSegment("..")),
            _ => {}
        }
        offset += segment.len() + 1;
    }
    Ok(())
}

/// Checks the characters of `text`, which stands at `offset` in its path.
fn check_chars(text: &str, offset: usize) -> Result<(), PathError> {
    // Printable ASCII, the common case, is valid: one pass over the bytes.
    if !text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        if let Some((index, ch)) = text.char_indices().find(|&(_, c)| is_invalid_char(c)) {
            return Err(PathError::InvalidCharacter { ch, index: index + offset });
        }
    }
    Ok(())
}

/// Checks a path and wraps a failure in [`Error::InvalidPath`].
///
/// # Errors
/// [`Error::InvalidPath`].
pub fn validate_path(path: &str) -> Result<()> {
    check_path(path).map_err(|source| Error::InvalidPath { path: path.to_string(), source })
}

/// Checks a path that must name a node below the root.
///
/// # Errors
/// [`Error::InvalidPath`], with [`PathError::Root`] for `/`.
pub fn validate_node_path(path: &str) -> Result<()> {
    validate_path(path)?;
    if path == "/" {
        return Err(Error::InvalidPath { path: path.to_string(), source: PathError::Root });
    }
    Ok(())
}

/// Is `path` in ZooKeeper's reserved tree (`/zookeeper` or below), as the server sees it?
///
/// # Examples
///
/// ```
/// use zkr_connection::path::is_reserved;
/// assert!(is_reserved("/zookeeper") && is_reserved("/zookeeper/quota/x"));
/// assert!(!is_reserved("/zookeepers") && !is_reserved("/app/zookeeper"));
/// ```
pub fn is_reserved(path: &str) -> bool {
    path.strip_prefix("/zookeeper").is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Checks a single node name (one path segment).
///
/// # Errors
/// [`Error::InvalidPath`].
///
/// # Examples
///
/// ```
/// assert!(zkr_connection::path::validate_name("lock-").is_ok());
/// assert!(zkr_connection::path::validate_name("a/b").is_err());
/// assert!(zkr_connection::path::validate_name("").is_err());
/// ```
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::InvalidPath { path: name.to_string(), source: PathError::Empty });
    }
    if name.contains('/') {
        return Err(Error::InvalidPath { path: name.to_string(), source: PathError::InvalidName });
    }
    // As `check_path` would check `/<name>`, without making that path: its characters, then
    // its one segment.
    let segment = match name {
        "." => Err(PathError::RelativeSegment(".")),
        ".." => Err(PathError::RelativeSegment("..")),
        _ => Ok(()),
    };
    check_chars(name, 1).and(segment).map_err(|source| Error::InvalidPath { path: name.to_string(), source })
}

/// Checks that `data` fits in one node.
///
/// # Errors
/// [`Error::DataTooLarge`].
pub fn validate_data(path: &str, data: &[u8]) -> Result<()> {
    if data.len() > MAX_DATA_LEN {
        return Err(Error::DataTooLarge { path: path.to_string(), len: data.len(), max: MAX_DATA_LEN });
    }
    Ok(())
}

/// Joins a parent path and a child name.
///
/// # Examples
///
/// ```
/// use zkr_connection::path::join;
/// assert_eq!(join("/", "a"), "/a");
/// assert_eq!(join("/a", "b"), "/a/b");
/// ```
pub fn join(parent: &str, child: &str) -> String {
    // Not `format!`: on every request's path, where the formatting machinery costs ten times
    // the copy (counted by `make bench-instructions`).
    let parent = if parent == "/" { "" } else { parent };
    let mut path = String::with_capacity(parent.len() + 1 + child.len());
    path.push_str(parent);
    path.push('/');
    path.push_str(child);
    path
}

/// The parent of a path (`None` for `/`).
///
/// # Examples
///
/// ```
/// use zkr_connection::path::parent;
/// assert_eq!(parent("/a/b"), Some("/a"));
/// assert_eq!(parent("/a"), Some("/"));
/// assert_eq!(parent("/"), None);
/// ```
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The last segment of a path.
///
/// # Examples
///
/// ```
/// assert_eq!(zkr_connection::path::node_name("/a/b"), "b");
/// ```
pub fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every proper ancestor of `path` below the root, top-down: `/a/b/c` gives `/a`, `/a/b`.
pub fn ancestors(path: &str) -> Vec<&str> {
    path.char_indices().skip(1).filter(|&(_, c)| c == '/').map(|(i, _)| &path[..i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zookeeper_rules() {
        assert_eq!(check_path(""), Err(PathError::Empty));
        assert_eq!(check_path("/"), Ok(()));
        assert_eq!(check_path("/a/"), Err(PathError::TrailingSlash));
        assert_eq!(check_path("/a/./b"), Err(PathError::RelativeSegment(".")));
        assert_eq!(check_path("/a/.."), Err(PathError::RelativeSegment("..")));
        assert_eq!(check_path("/a\0b"), Err(PathError::InvalidCharacter { ch: '\0', index: 2 }));
        assert_eq!(check_path("/a\u{e000}"), Err(PathError::InvalidCharacter { ch: '\u{e000}', index: 2 }));
        assert!(check_path("/a.b/..c/ä/中").is_ok());
    }

    #[test]
    fn ancestors_are_top_down() {
        assert_eq!(ancestors("/a/b/c"), vec!["/a", "/a/b"]);
        assert!(ancestors("/a").is_empty());
    }

    proptest! {
        #[test]
        fn check_path_never_panics(s in "\\PC*") {
            let _ = check_path(&s);
        }

        /// A name is checked as the path `/<name>` would be, without making that path.
        #[test]
        fn a_name_is_checked_as_its_path_would_be(name in "[^/]{1,6}|\\.|\\.\\.|a\u{1}b") {
            let as_path = check_path(&format!("/{name}"));
            let as_name = validate_name(&name).map_err(|e| match e {
                Error::InvalidPath { source, .. } => source,
                other => panic!("{other}"),
            });
            prop_assert_eq!(as_name, as_path);
        }

        #[test]
        fn valid_paths_round_trip_through_parent_and_name(segs in prop::collection::vec("[a-z0-9_-]{1,8}", 1..6)) {
            let path = format!("/{}", segs.join("/"));
            prop_assert!(check_path(&path).is_ok());
            let p = parent(&path).unwrap();
            prop_assert_eq!(join(p, node_name(&path)), path.clone());
            prop_assert_eq!(ancestors(&path).len(), segs.len() - 1);
        }
    }
}
