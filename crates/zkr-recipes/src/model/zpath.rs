//! [`ZPath`]: a ZooKeeper path with parameters, Curator's `ZPath`.

use std::fmt;
use std::sync::Arc;

use zkr_connection::path::{self, PathError};

use super::ModelError;

/// One segment of a [`ZPath`]: a node name, or a parameter still to be resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Segment {
    Name(String),
    Parameter(String),
}

/// A path template: a ZooKeeper path whose segments may be parameters, `{name}`, given values
/// by [`resolve`](Self::resolve) (Curator's `ZPath.parseWithIds` and `resolved(...)`).
///
/// A parameter is a whole segment (`/users/{id}`, not `/users/user-{id}`); a template without
/// parameters is resolved and names one node. Every value given to a parameter, and every
/// [`child`](Self::child) name, is a node name: not empty, no `/`, not `.` or `..`, no
/// character ZooKeeper refuses. Cheap to clone.
///
/// # Examples
///
/// ```
/// use zkr_recipes::model::ZPath;
///
/// let orders = ZPath::parse("/users/{id}/orders/{order}")?;
/// assert_eq!(orders.parameters(), ["id", "order"]);
/// assert!(!orders.is_resolved());
///
/// let one = orders.resolve(&["alice", "17"])?;
/// assert!(one.is_resolved());
/// assert_eq!(one.as_path(), "/users/alice/orders/17");
/// assert_eq!(one.parent().unwrap().to_string(), "/users/alice/orders");
/// assert_eq!(orders.ids_of("/users/bob/orders/3"), Some(vec!["bob", "3"]));
///
/// assert!(orders.resolve(&["alice"]).is_err(), "two parameters, one value");
/// assert!(orders.resolve(&["a/b", "17"]).is_err(), "a value is one node name");
/// # Ok::<(), zkr_recipes::model::ModelError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ZPath {
    segments: Arc<[Segment]>,
    /// The path as text (`/users/{id}`), made once.
    text: Arc<str>,
}

/// Why a template does not parse: in [`ModelError::InvalidTemplate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// It is not a ZooKeeper path (with its parameters read as names).
    #[error(transparent)]
    Path(#[from] PathError),
    /// A segment with braces that is not a whole parameter `{name}` (`user-{id}`, `{}`,
    /// `{a}b`, `{{a}}`).
    #[error("segment {segment:?} is not a parameter: a parameter is a whole segment, {{name}}")]
    Parameter {
        /// The segment.
        segment: String,
    },
}

impl ZPath {
    /// The root path, `/`: resolved, without a parent.
    ///
    /// ```
    /// assert_eq!(zkr_recipes::model::ZPath::root().as_path(), "/");
    /// ```
    pub fn root() -> ZPath {
        ZPath::from_segments(Vec::new())
    }

    /// Parses a template: an absolute ZooKeeper path whose segments of the form `{name}` are
    /// parameters (Curator's `ZPath.parseWithIds`; `{id}` may appear more than once, as Curator's
    /// `ZPath.parameter()` does).
    ///
    /// # Errors
    /// [`ModelError::InvalidTemplate`]: not a ZooKeeper path ([`TemplateError::Path`]), or
    /// braces that do not make a whole parameter ([`TemplateError::Parameter`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// assert!(ZPath::parse("/users/{id}").is_ok());
    /// assert!(ZPath::parse("users/{id}").is_err(), "not absolute");
    /// assert!(ZPath::parse("/users/user-{id}").is_err(), "not a whole segment");
    /// ```
    #[doc(alias = "parseWithIds")]
    pub fn parse(template: &str) -> Result<ZPath, ModelError> {
        let invalid = |source| ModelError::InvalidTemplate { template: template.to_owned(), source };
        path::check_path(template).map_err(|e| invalid(TemplateError::Path(e)))?;
        let names = template.split('/').filter(|s| !s.is_empty());
        let segments = names.map(parse_segment).collect::<Result<Vec<_>, _>>().map_err(invalid)?;
        Ok(ZPath::from_segments(segments))
    }

    /// A resolved path of `node_path`'s segments, all names (a path the server gave, which
    /// is valid): braces in them are names too.
    pub(super) fn from_node_path(node_path: &str) -> ZPath {
        let names = node_path.split('/').filter(|s| !s.is_empty());
        ZPath::from_segments(names.map(|n| Segment::Name(n.to_owned())).collect())
    }

    fn from_segments(segments: Vec<Segment>) -> ZPath {
        let mut text = String::new();
        for segment in &segments {
            text.push('/');
            match segment {
                Segment::Name(name) => text.push_str(name),
                Segment::Parameter(name) => {
                    text.push('{');
                    text.push_str(name);
                    text.push('}');
                }
            }
        }
        if text.is_empty() {
            text.push('/');
        }
        ZPath { segments: segments.into(), text: text.into() }
    }

    /// The names of the parameters still to resolve, in order.
    ///
    /// ```
    /// let p = zkr_recipes::model::ZPath::parse("/a/{x}/b/{y}").unwrap();
    /// assert_eq!(p.parameters(), ["x", "y"]);
    /// ```
    pub fn parameters(&self) -> Vec<&str> {
        self.segments
            .iter()
            .filter_map(|s| match s {
                Segment::Parameter(name) => Some(name.as_str()),
                Segment::Name(_) => None,
            })
            .collect()
    }

    /// Has it no parameter left, so that it names one node (Curator's `isResolved`)?
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// assert!(ZPath::parse("/users/alice").unwrap().is_resolved());
    /// assert!(!ZPath::parse("/users/{id}").unwrap().is_resolved());
    /// ```
    #[doc(alias = "isResolved")]
    pub fn is_resolved(&self) -> bool {
        self.segments.iter().all(|s| matches!(s, Segment::Name(_)))
    }

    /// Is it `/`?
    ///
    /// ```
    /// assert!(zkr_recipes::model::ZPath::parse("/").unwrap().is_root());
    /// ```
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The path with every parameter given its value, in order (Curator's `resolved(...)`,
    /// which also takes fewer values: here every parameter needs one).
    ///
    /// # Errors
    /// [`ModelError::WrongArity`] when `ids` has not one value per parameter;
    /// [`ModelError::InvalidName`] for a value that is not a node name.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::model::{ModelError, ZPath};
    /// let users = ZPath::parse("/users/{id}")?;
    /// assert_eq!(users.resolve(&["alice"])?.as_path(), "/users/alice");
    /// assert!(matches!(users.resolve(&[]), Err(ModelError::WrongArity { expected: 1, given: 0, .. })));
    /// assert!(matches!(users.resolve(&[".."]), Err(ModelError::InvalidName { .. })));
    /// # Ok::<(), ModelError>(())
    /// ```
    #[doc(alias = "resolved")]
    pub fn resolve(&self, ids: &[&str]) -> Result<ZPath, ModelError> {
        let expected = self.parameters().len();
        if ids.len() != expected {
            return Err(ModelError::WrongArity { template: self.to_string(), expected, given: ids.len() });
        }
        let mut ids = ids.iter();
        let mut segments = Vec::with_capacity(self.segments.len());
        for segment in self.segments.iter() {
            segments.push(match segment {
                Segment::Name(_) => segment.clone(),
                Segment::Parameter(parameter) => {
                    let id = ids.next().expect("one value per parameter");
                    self.check_name(Some(parameter), id)?;
                    Segment::Name((*id).to_owned())
                }
            });
        }
        Ok(ZPath::from_segments(segments))
    }

    /// The path one level deeper, at the node `name` (Curator's `child`). The name is taken as
    /// it is: `child("{x}")` is a node named `{x}`, not a parameter.
    ///
    /// # Errors
    /// [`ModelError::InvalidName`] when `name` is not a node name.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// let orders = ZPath::parse("/users/{id}")?.child("orders")?;
    /// assert_eq!(orders.to_string(), "/users/{id}/orders");
    /// assert!(orders.child("a/b").is_err());
    /// # Ok::<(), zkr_recipes::model::ModelError>(())
    /// ```
    pub fn child(&self, name: &str) -> Result<ZPath, ModelError> {
        self.check_name(None, name)?;
        let mut segments = self.segments.to_vec();
        segments.push(Segment::Name(name.to_owned()));
        Ok(ZPath::from_segments(segments))
    }

    /// The path one level up; `None` for the root.
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// let users = ZPath::parse("/users/{id}").unwrap().parent().unwrap();
    /// assert_eq!(users.as_path(), "/users");
    /// assert_eq!(users.parent().unwrap().parent(), None);
    /// ```
    pub fn parent(&self) -> Option<ZPath> {
        let (_, above) = self.segments.split_last()?;
        Some(ZPath::from_segments(above.to_vec()))
    }

    /// The last segment as text (`{id}` for a parameter); empty for the root.
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// assert_eq!(ZPath::parse("/users/alice").unwrap().node_name(), "alice");
    /// ```
    pub fn node_name(&self) -> &str {
        path::node_name(&self.text)
    }

    /// The path as text: the node's path once resolved, else the template (`/users/{id}`),
    /// as `Display` prints it (Curator's `fullPath`, which refuses an unresolved path).
    ///
    /// ```
    /// let p = zkr_recipes::model::ZPath::parse("/users/{id}").unwrap();
    /// assert_eq!(p.as_path(), "/users/{id}");
    /// ```
    #[doc(alias = "fullPath")]
    pub fn as_path(&self) -> &str {
        &self.text
    }

    /// The values of the parameters in `node_path` when it fits the template (same depth,
    /// same names where the template has names), in order; `None` when it does not fit.
    ///
    /// ```
    /// use zkr_recipes::model::ZPath;
    /// let p = ZPath::parse("/users/{id}/orders/{order}").unwrap();
    /// assert_eq!(p.ids_of("/users/alice/orders/7"), Some(vec!["alice", "7"]));
    /// assert_eq!(p.ids_of("/users/alice/carts/7"), None);
    /// assert_eq!(p.ids_of("/users/alice/orders"), None);
    /// ```
    pub fn ids_of<'a>(&self, node_path: &'a str) -> Option<Vec<&'a str>> {
        let names: Vec<&str> = node_path.split('/').filter(|s| !s.is_empty()).collect();
        if names.len() != self.segments.len() || path::check_path(node_path).is_err() {
            return None;
        }
        let mut ids = Vec::new();
        for (segment, name) in self.segments.iter().zip(names) {
            match segment {
                Segment::Name(own) if own != name => return None,
                Segment::Name(_) => {}
                Segment::Parameter(_) => ids.push(name),
            }
        }
        Some(ids)
    }

    /// Does `node_path` fit the template ([`ids_of`](Self::ids_of) is `Some`)?
    ///
    /// ```
    /// let p = zkr_recipes::model::ZPath::parse("/users/{id}").unwrap();
    /// assert!(p.matches("/users/alice") && !p.matches("/users/alice/orders"));
    /// ```
    pub fn matches(&self, node_path: &str) -> bool {
        self.ids_of(node_path).is_some()
    }

    /// The first parameter still to resolve.
    pub(super) fn first_parameter(&self) -> Option<&str> {
        self.parameters().first().copied()
    }

    /// The longest resolved path the template starts with, and how many levels below it the
    /// template's nodes are: `/users` and 1 for `/users/{id}`.
    pub(super) fn resolved_prefix(&self) -> (ZPath, usize) {
        let names = self.segments.iter().take_while(|s| matches!(s, Segment::Name(_))).count();
        (ZPath::from_segments(self.segments[..names].to_vec()), self.segments.len() - names)
    }

    fn check_name(&self, parameter: Option<&str>, value: &str) -> Result<(), ModelError> {
        check_name(value).map_err(|source| ModelError::InvalidName {
            template: self.to_string(),
            parameter: parameter.map(str::to_owned),
            value: value.to_owned(),
            source,
        })
    }
}

/// A segment of a template: `{name}` is a parameter, a segment without braces a name.
fn parse_segment(segment: &str) -> Result<Segment, TemplateError> {
    let bad = || TemplateError::Parameter { segment: segment.to_owned() };
    if !segment.contains(['{', '}']) {
        return Ok(Segment::Name(segment.to_owned()));
    }
    let name = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')).ok_or_else(bad)?;
    if name.is_empty() || name.contains(['{', '}']) {
        return Err(bad());
    }
    Ok(Segment::Parameter(name.to_owned()))
}

/// One node name: not empty, no `/`, not `.` or `..`, no character ZooKeeper refuses.
fn check_name(name: &str) -> Result<(), PathError> {
    match name {
        "" => Err(PathError::Empty),
        _ if name.contains('/') => Err(PathError::InvalidName),
        _ => path::check_path(&format!("/{name}")),
    }
}

impl fmt::Display for ZPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ZPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ZPath").field(&self.text).finish()
    }
}

impl std::str::FromStr for ZPath {
    type Err = ModelError;

    fn from_str(template: &str) -> Result<ZPath, ModelError> {
        ZPath::parse(template)
    }
}

impl zkr_connection::Classify for TemplateError {
    /// Always [`ErrorKind::Usage`](zkr_connection::ErrorKind::Usage): the template does not parse; nothing was sent.
    fn kind(&self) -> zkr_connection::ErrorKind {
        zkr_connection::ErrorKind::Usage
    }

    /// Never: nothing was sent.
    fn is_ambiguous(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn template_error(template: &str) -> TemplateError {
        match ZPath::parse(template) {
            Err(ModelError::InvalidTemplate { source, .. }) => source,
            other => panic!("{template}: {other:?}"),
        }
    }

    #[test]
    fn templates_parse_by_zookeeper_rules_and_whole_segment_parameters() {
        assert_eq!(ZPath::parse("/").unwrap(), ZPath::root());
        assert_eq!(ZPath::parse("/a/{id}/{id}").unwrap().parameters(), ["id", "id"]);
        assert_eq!(template_error("a"), TemplateError::Path(PathError::NotAbsolute));
        assert_eq!(template_error("/a/"), TemplateError::Path(PathError::TrailingSlash));
        assert_eq!(template_error("/a//b"), TemplateError::Path(PathError::EmptySegment(3)));
        assert_eq!(template_error("/a/../b"), TemplateError::Path(PathError::RelativeSegment("..")));
        for bad in ["/a/x{id}", "/a/{id}x", "/a/{}", "/a/{{id}}", "/a/{i}d}", "/a/}"] {
            let segment = bad.rsplit('/').next().unwrap().to_owned();
            assert_eq!(template_error(bad), TemplateError::Parameter { segment }, "{bad}");
        }
        let error = ZPath::parse("/a/x{id}").unwrap_err();
        assert_eq!(error.to_string(), r#"invalid path template "/a/x{id}""#);
        let cause = std::error::Error::source(&error).unwrap().to_string();
        assert_eq!(cause, r#"segment "x{id}" is not a parameter: a parameter is a whole segment, {name}"#);
    }

    #[test]
    fn resolving_takes_one_node_name_per_parameter() {
        let t = ZPath::parse("/u/{id}/o/{order}").unwrap();
        assert_eq!(t.resolve(&["a", "1"]).unwrap().as_path(), "/u/a/o/1");
        assert!(matches!(t.resolve(&["a"]), Err(ModelError::WrongArity { expected: 2, given: 1, .. })));
        assert!(matches!(
            t.resolve(&["a", "1", "x"]),
            Err(ModelError::WrongArity { expected: 2, given: 3, .. })
        ));
        for (bad, why) in [
            ("", PathError::Empty),
            ("a/b", PathError::InvalidName),
            (".", PathError::RelativeSegment(".")),
            ("..", PathError::RelativeSegment("..")),
            ("a\u{0}", PathError::InvalidCharacter { ch: '\0', index: 2 }),
        ] {
            let Err(ModelError::InvalidName { parameter, value, source, .. }) = t.resolve(&["a", bad]) else {
                panic!("{bad:?} resolved");
            };
            assert_eq!((parameter.as_deref(), value.as_str(), source), (Some("order"), bad, why));
        }
        // A value with braces is a name like any other: it does not bring a parameter back.
        let odd = t.resolve(&["{x}", "1"]).unwrap();
        assert!(odd.is_resolved() && odd.parameters().is_empty());
        assert_eq!(odd.as_path(), "/u/{x}/o/1");
        assert!(ZPath::root().resolve(&[]).unwrap().is_root());
    }

    #[test]
    fn children_parents_and_prefixes() {
        let t = ZPath::parse("/u/{id}").unwrap();
        assert_eq!(t.child("o").unwrap().as_path(), "/u/{id}/o");
        let Err(ModelError::InvalidName { parameter: None, .. }) = t.child("..") else { panic!() };
        assert_eq!(t.parent().unwrap().as_path(), "/u");
        assert_eq!(ZPath::root().parent(), None);
        assert_eq!(t.first_parameter(), Some("id"));
        let (prefix, depth) = ZPath::parse("/a/b/{x}/c/{y}").unwrap().resolved_prefix();
        assert_eq!((prefix.as_path(), depth), ("/a/b", 3));
        let (prefix, depth) = ZPath::parse("/{tenant}").unwrap().resolved_prefix();
        assert_eq!((prefix.as_path(), depth), ("/", 1));
        assert_eq!(ZPath::parse("/a").unwrap().resolved_prefix().1, 0);
        assert_eq!(ZPath::from_node_path("/a/{b}").parameters(), Vec::<&str>::new());
        assert_eq!(format!("{t:?}"), r#"ZPath("/u/{id}")"#);
        assert_eq!("/u/{id}".parse::<ZPath>().unwrap(), t);
    }

    #[test]
    fn node_paths_fit_by_depth_and_names() {
        let t = ZPath::parse("/u/{id}/o").unwrap();
        assert_eq!(t.ids_of("/u/a/o"), Some(vec!["a"]));
        for other in ["/u/a", "/u/a/o/x", "/v/a/o", "/u/a/p", "u/a/o", "/"] {
            assert!(!t.matches(other), "{other}");
        }
        assert_eq!(ZPath::root().ids_of("/"), Some(vec![]));
    }

    fn segments() -> impl Strategy<Value = Vec<(bool, String)>> {
        prop::collection::vec((any::<bool>(), "[a-z0-9_.-]{1,6}"), 0..6)
            .prop_filter("no relative segment", |s| s.iter().all(|(_, n)| n != "." && n != ".."))
    }

    proptest! {
        /// A template prints as it was written, parses back from its text, and resolving it
        /// with valid names gives a node path that fits it and gives those names back.
        #[test]
        fn templates_round_trip_and_resolve(
            segments in segments(),
            ids in prop::collection::vec("[a-zA-Z0-9_:-]{1,8}", 6),
        ) {
            let text: String = segments
                .iter()
                .map(|(param, n)| if *param { format!("/{{{n}}}") } else { format!("/{n}") })
                .collect();
            let text = if text.is_empty() { "/".to_owned() } else { text };
            let template = ZPath::parse(&text).unwrap();
            prop_assert_eq!(template.to_string(), text.clone());
            prop_assert_eq!(ZPath::parse(template.as_path()).unwrap(), template.clone());
            let ids: Vec<&str> = ids.iter().map(String::as_str).take(template.parameters().len()).collect();
            let resolved = template.resolve(&ids).unwrap();
            prop_assert!(resolved.is_resolved());
            prop_assert!(path::check_path(resolved.as_path()).is_ok());
            prop_assert_eq!(template.ids_of(resolved.as_path()), Some(ids.clone()));
            prop_assert_eq!(template.is_resolved(), ids.is_empty());
        }

        /// No input makes parsing or resolving panic, and a value with `/` never resolves.
        #[test]
        fn no_input_panics(template in "\\PC{0,24}", id in "\\PC{0,8}") {
            if let Ok(parsed) = ZPath::parse(&template) {
                let ids = vec![id.as_str(); parsed.parameters().len()];
                if let Ok(resolved) = parsed.resolve(&ids) {
                    prop_assert!(!id.contains('/') || ids.is_empty());
                    prop_assert!(path::check_path(resolved.as_path()).is_ok());
                }
            }
        }
    }
}
