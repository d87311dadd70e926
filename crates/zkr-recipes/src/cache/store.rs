//! The cache's copy in as few bytes as it can take (issue 47 item 1): each node is one
//! allocation holding a compact `Stat`, its name (relative to its parent) and its data; a
//! node's children are a directory of sorted chunks. Directories and chunks are shared
//! (`Arc`) by the tracker's copy and every snapshot: a change copies the chunks and
//! directories on its path, never the tree.

use std::fmt;
use std::sync::Arc;

use integer_encoding::VarInt;
use zookeeper_client::Stat;

/// A node as the cache holds it: its data and its `Stat`, in one shared allocation (cheap to
/// clone). The `Stat` is kept compact and built when asked for.
///
/// # Examples
///
/// ```
/// use zkr_recipes::cache::CachedNode;
///
/// fn describe(node: &CachedNode) -> String {
///     format!("{} bytes, version {}", node.data().len(), node.stat().version)
/// }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CachedNode(Arc<[u8]>);

/// Where the name starts: the header is the data's start (4 bytes) and this (1 byte); the
/// compact `Stat` lies between the header and the name.
const HEADER: usize = 5;

impl CachedNode {
    /// A node holding `data` with `stat`, as the cache would hold it.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::cache::CachedNode;
    /// use zkr_connection::Stat;
    ///
    /// let stat = Stat {
    ///     czxid: 2, mzxid: 9, pzxid: 2, ctime: 0, mtime: 0, version: 3, cversion: 0,
    ///     aversion: 0, ephemeral_owner: 0, data_length: 5, num_children: 0,
    /// };
    /// let node = CachedNode::new(b"hello", &stat);
    /// assert_eq!((node.data(), node.stat().version), (&b"hello"[..], 3));
    /// ```
    pub fn new(data: &[u8], stat: &Stat) -> Self {
        Self::named("", data, stat)
    }

    /// A node named `name` (its path's last part; the cache's directories are sorted by it).
    pub(crate) fn named(name: &str, data: &[u8], stat: &Stat) -> Self {
        // The header and the Stat's varints (at most 11 of 10 bytes) on the stack first, so
        // that the node's length is known.
        let mut head = [0u8; HEADER + 11 * 10];
        let mut name_at = HEADER;
        for field in compact(stat) {
            name_at += field.encode_var(&mut head[name_at..]);
        }
        let data_at = name_at + name.len();
        head[..4].copy_from_slice(&(data_at as u32).to_le_bytes());
        // At most 115 bytes before the name: it starts below 256.
        head[4] = name_at as u8;
        // One allocation: the shared slice made zeroed, then filled (a new `Arc` is unique).
        let mut bytes: Arc<[u8]> = std::iter::repeat_n(0, data_at + data.len()).collect();
        if let Some(room) = Arc::get_mut(&mut bytes) {
            room[..name_at].copy_from_slice(&head[..name_at]);
            room[name_at..data_at].copy_from_slice(name.as_bytes());
            room[data_at..].copy_from_slice(data);
        }
        CachedNode(bytes)
    }

    /// This node without its data (the `Stat` still says how long the data is): what a cache
    /// built with [`data_not_cached`](super::CuratorCacheBuilder::data_not_cached) keeps.
    pub(crate) fn without_data(&self) -> Self {
        let end = self.data_at();
        let mut bytes = self.0[..end].to_vec();
        bytes.shrink_to_fit();
        CachedNode(Arc::from(bytes))
    }

    fn data_at(&self) -> usize {
        let at = u32::from_le_bytes([self.0[0], self.0[1], self.0[2], self.0[3]]) as usize;
        at.min(self.0.len())
    }

    fn name_at(&self) -> usize {
        usize::from(self.0[4]).min(self.data_at())
    }

    /// The node's data (empty when the cache keeps no data).
    pub fn data(&self) -> &[u8] {
        &self.0[self.data_at()..]
    }

    /// The node's `Stat` as read.
    pub fn stat(&self) -> Stat {
        let mut f = Fields { bytes: &self.0[HEADER..self.name_at()] };
        let czxid = f.next();
        let mzxid = czxid.wrapping_add(f.next());
        let pzxid = czxid.wrapping_add(f.next());
        let ctime = f.next();
        let mtime = ctime.wrapping_add(f.next());
        Stat {
            czxid,
            mzxid,
            pzxid,
            ctime,
            mtime,
            version: f.next() as i32,
            cversion: f.next() as i32,
            aversion: f.next() as i32,
            ephemeral_owner: f.next(),
            data_length: f.next() as i32,
            num_children: f.next() as i32,
        }
    }

    /// The zxid of the node's creation and of its last change, without building the `Stat`.
    pub(crate) fn zxids(&self) -> (i64, i64) {
        let mut f = Fields { bytes: &self.0[HEADER..self.name_at()] };
        let czxid = f.next();
        (czxid, czxid.wrapping_add(f.next()))
    }

    /// The node's name: its path's last part (empty for a node made with [`new`](Self::new)).
    pub(crate) fn name(&self) -> &str {
        std::str::from_utf8(self.name_bytes()).unwrap_or_default()
    }

    /// The name's bytes, which the directories compare: UTF-8 sorts as its bytes do, and they
    /// need no validation on each step of a search.
    fn name_bytes(&self) -> &[u8] {
        &self.0[self.name_at()..self.data_at()]
    }

    /// The data decoded by `codec` (for example [`Json`](crate::config::Json)).
    ///
    /// # Errors
    /// The codec's message when the data is not a value.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::cache::CachedNode;
    /// use zkr_recipes::config::Utf8;
    ///
    /// fn address(node: &CachedNode) -> Option<String> {
    ///     node.decode(&Utf8).ok()
    /// }
    /// ```
    pub fn decode<T>(&self, codec: &impl crate::config::Codec<T>) -> Result<T, crate::codec::CodecError> {
        codec.decode(self.data())
    }

    /// A node created at `czxid`, last written at `mzxid` (version 0), holding `data`: for the
    /// recipes' unit tests.
    #[cfg(test)]
    pub(crate) fn made(czxid: i64, mzxid: i64, data: &[u8]) -> Self {
        let stat = Stat {
            czxid,
            mzxid,
            pzxid: mzxid,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: data.len() as i32,
            num_children: 0,
        };
        CachedNode::new(data, &stat)
    }
}

/// The data is not shown: node data may hold what a log must not.
impl fmt::Debug for CachedNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedNode")
            .field("data_len", &self.data().len())
            .field("stat", &self.stat())
            .finish()
    }
}

/// The `Stat`'s fields as small numbers: the zxids and times after the first as differences.
fn compact(stat: &Stat) -> [i64; 11] {
    [
        stat.czxid,
        stat.mzxid.wrapping_sub(stat.czxid),
        stat.pzxid.wrapping_sub(stat.czxid),
        stat.ctime,
        stat.mtime.wrapping_sub(stat.ctime),
        stat.version.into(),
        stat.cversion.into(),
        stat.aversion.into(),
        stat.ephemeral_owner,
        stat.data_length.into(),
        stat.num_children.into(),
    ]
}

struct Fields<'a> {
    bytes: &'a [u8],
}

impl Fields<'_> {
    /// The next field (0 past the end: the node wrote every field itself).
    fn next(&mut self) -> i64 {
        let (value, used) = i64::decode_var(self.bytes).unwrap_or((0, self.bytes.len()));
        self.bytes = &self.bytes[used..];
        value
    }
}

/// A node in the copy and its children.
#[derive(Clone)]
struct Entry {
    node: CachedNode,
    children: Option<Arc<Dir>>,
}

/// A directory's entries, in name order, in chunks of up to `2 * CHUNK` (so that a change
/// copies one chunk and the list of chunks, not every entry of a wide directory).
#[derive(Clone, Default)]
struct Dir {
    chunks: Vec<Arc<Vec<Entry>>>,
}

const CHUNK: usize = 64;

impl Dir {
    /// The chunk that holds `name` or would: the first whose last name is not below it.
    fn chunk_of(&self, name: &[u8]) -> usize {
        let at = self.chunks.partition_point(|c| c.last().is_some_and(|e| e.node.name_bytes() < name));
        at.min(self.chunks.len().saturating_sub(1))
    }

    /// Where `name` is in its chunk, or would be: the chunk's index and the search's answer.
    fn find(&self, name: &[u8]) -> (usize, Option<Result<usize, usize>>) {
        let at = self.chunk_of(name);
        let found = self.chunks.get(at).map(|c| c.binary_search_by(|e| e.node.name_bytes().cmp(name)));
        (at, found)
    }

    fn get(&self, name: &str) -> Option<&Entry> {
        let (at, Some(Ok(i))) = self.find(name.as_bytes()) else { return None };
        Some(&self.chunks[at][i])
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut Entry> {
        let (at, Some(Ok(i))) = self.find(name.as_bytes()) else { return None };
        Some(&mut Arc::make_mut(&mut self.chunks[at])[i])
    }

    /// Puts `node` under its name; returns the node it replaced (whose children it keeps).
    fn put(&mut self, node: CachedNode) -> Option<CachedNode> {
        if self.chunks.is_empty() {
            self.chunks.push(Arc::default());
        }
        let (at, found) = self.find(node.name_bytes());
        let chunk = Arc::make_mut(&mut self.chunks[at]);
        match found.unwrap_or(Err(0)) {
            Ok(i) => return Some(std::mem::replace(&mut chunk[i].node, node)),
            Err(i) => chunk.insert(i, Entry { node, children: None }),
        }
        if chunk.len() > 2 * CHUNK {
            let mut upper = chunk.split_off(CHUNK);
            upper.shrink_to_fit();
            chunk.shrink_to_fit();
            self.chunks.insert(at + 1, Arc::new(upper));
        }
        None
    }

    fn remove(&mut self, name: &str) -> Option<Entry> {
        let (at, Some(Ok(i))) = self.find(name.as_bytes()) else { return None };
        let chunk = Arc::make_mut(&mut self.chunks[at]);
        let entry = chunk.remove(i);
        if chunk.is_empty() {
            self.chunks.remove(at);
        }
        Some(entry)
    }

    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.chunks.iter().flat_map(|c| c.iter())
    }
}

/// The cache's nodes under its root: the tracker's copy and each snapshot's (a clone shares
/// everything).
#[derive(Clone, Default)]
pub(super) struct Tree {
    root_path: Arc<str>,
    root: Option<Entry>,
    len: usize,
}

/// Why a node was not put in the copy.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NoParent;

impl Tree {
    /// An empty copy of the tree at `root`.
    pub(super) fn new(root: &str) -> Self {
        Tree { root_path: root.into(), root: None, len: 0 }
    }

    /// The names from the root down to `path`: empty for the root; `None` outside it.
    fn names<'a>(&self, path: &'a str) -> Option<impl Iterator<Item = &'a str>> {
        Some(names_in(self.below_root(path)?))
    }

    /// `path` below the root, without the slashes around it: empty for the root; `None`
    /// outside it.
    fn below_root<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = if path == &*self.root_path {
            ""
        } else if &*self.root_path == "/" {
            path.strip_prefix('/').filter(|r| !r.is_empty())?
        } else {
            path.strip_prefix(&*self.root_path)?.strip_prefix('/').filter(|r| !r.is_empty())?
        };
        Some(rest.trim_end_matches('/'))
    }

    /// The names of `path`'s parents below the root and its own: `Ok(None)` for the root,
    /// `Err` outside it.
    fn parents_and_last<'a>(
        &self,
        path: &'a str,
    ) -> Result<Option<(impl Iterator<Item = &'a str>, &'a str)>, NoParent> {
        let rest = self.below_root(path).ok_or(NoParent)?;
        let (parents, last) = rest.rsplit_once('/').unwrap_or(("", rest));
        Ok((!last.is_empty()).then(|| (names_in(parents), last)))
    }

    fn entry(&self, path: &str) -> Option<&Entry> {
        let mut entry = self.root.as_ref()?;
        for name in self.names(path)? {
            entry = entry.children.as_ref()?.get(name)?;
        }
        Some(entry)
    }

    /// The node at `path`.
    pub(super) fn get(&self, path: &str) -> Option<&CachedNode> {
        self.entry(path).map(|e| &e.node)
    }

    /// The children of `parent`, by name in name order.
    pub(super) fn children(&self, parent: &str) -> impl Iterator<Item = (&str, &CachedNode)> {
        let dir = self.entry(parent).and_then(|e| e.children.as_deref());
        dir.into_iter().flat_map(Dir::iter).map(|e| (e.node.name(), &e.node))
    }

    /// How many nodes the copy holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Puts `node` at `path`; returns what it replaced. Fails when the parent is not in the
    /// copy (a node is put after its parent: the reads are applied in that order).
    pub(super) fn put(&mut self, path: &str, node: &CachedNode) -> Result<Option<CachedNode>, NoParent> {
        let Some((parents, last)) = self.parents_and_last(path)? else {
            let old = match &mut self.root {
                Some(root) => Some(std::mem::replace(&mut root.node, node.clone())),
                None => {
                    self.root = Some(Entry { node: node.clone(), children: None });
                    None
                }
            };
            self.len += usize::from(old.is_none());
            return Ok(old);
        };
        let mut entry = self.root.as_mut().ok_or(NoParent)?;
        for name in parents {
            entry = Arc::make_mut(entry.children.as_mut().ok_or(NoParent)?).get_mut(name).ok_or(NoParent)?;
        }
        let node =
            if node.name_bytes() == last.as_bytes() { node.clone() } else { CachedNode::renamed(node, last) };
        let old = Arc::make_mut(entry.children.get_or_insert_with(Arc::default)).put(node);
        self.len += usize::from(old.is_none());
        Ok(old)
    }

    /// Takes the node at `path` out of the copy, with everything under it; returns each node
    /// taken with its path, children before their parent.
    pub(super) fn remove(&mut self, path: &str) -> Vec<(String, CachedNode)> {
        let taken = match self.parents_and_last(path) {
            Err(NoParent) => return Vec::new(),
            Ok(None) => self.root.take(),
            Ok(Some((parents, last))) => self.detach(parents, last),
        };
        let mut gone = Vec::new();
        if let Some(entry) = taken {
            post_order(&entry, path.to_owned(), &mut gone);
        }
        self.len -= gone.len().min(self.len);
        gone
    }

    fn detach<'a>(&mut self, parents: impl Iterator<Item = &'a str>, last: &str) -> Option<Entry> {
        let mut entry = self.root.as_mut()?;
        for name in parents {
            entry.children.as_ref()?.get(name)?;
            entry = Arc::make_mut(entry.children.as_mut()?).get_mut(name)?;
        }
        entry.children.as_ref()?.get(last)?;
        let dir = Arc::make_mut(entry.children.as_mut()?);
        let taken = dir.remove(last);
        if dir.chunks.is_empty() {
            entry.children = None;
        }
        taken
    }

    /// Every node with its path: parents before their children, siblings by name.
    pub(super) fn iter(&self) -> impl Iterator<Item = (String, &CachedNode)> {
        let mut stack: Vec<(String, &Entry)> = Vec::new();
        if let Some(root) = &self.root {
            stack.push((self.root_path.to_string(), root));
        }
        std::iter::from_fn(move || {
            let (path, entry) = stack.pop()?;
            if let Some(dir) = &entry.children {
                let children: Vec<_> =
                    dir.iter().map(|child| (join(&path, child.node.name()), child)).collect();
                stack.extend(children.into_iter().rev());
            }
            Some((path, &entry.node))
        })
    }
}

impl CachedNode {
    /// `node` under another name (a node made by hand and put at a path).
    fn renamed(node: &CachedNode, name: &str) -> Self {
        CachedNode::named(name, node.data(), &node.stat())
    }
}

/// The names in `rest`, a path below the root without its first slash.
fn names_in(rest: &str) -> impl Iterator<Item = &str> {
    rest.split('/').filter(|n| !n.is_empty())
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `entry` and everything under it with their paths, children before their parents; without
/// recursion, so that a tree as deep as ZooKeeper allows cannot exhaust the stack.
fn post_order(entry: &Entry, path: String, out: &mut Vec<(String, CachedNode)>) {
    // Each entry is pushed after its children are (depth-first), then the list is reversed.
    let mut pre: Vec<(String, &Entry)> = Vec::new();
    let mut todo = vec![(path, entry)];
    while let Some((path, entry)) = todo.pop() {
        if let Some(dir) = &entry.children {
            todo.extend(dir.iter().map(|child| (join(&path, child.node.name()), child)));
        }
        pre.push((path, entry));
    }
    out.extend(pre.into_iter().rev().map(|(path, entry)| (path, entry.node.clone())));
}

/// Dropping a directory takes apart the ones below it that nothing else shares, one at a time:
/// the default drop would recurse once per level.
impl Drop for Dir {
    fn drop(&mut self) {
        let mut below: Vec<Arc<Dir>> = Vec::new();
        let take = |chunks: &mut Vec<Arc<Vec<Entry>>>, below: &mut Vec<Arc<Dir>>| {
            for chunk in chunks.drain(..) {
                if let Ok(entries) = Arc::try_unwrap(chunk) {
                    below.extend(entries.into_iter().filter_map(|mut e| e.children.take()));
                }
            }
        };
        take(&mut self.chunks, &mut below);
        while let Some(dir) = below.pop() {
            if let Ok(mut dir) = Arc::try_unwrap(dir) {
                take(&mut dir.chunks, &mut below);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn stat(czxid: i64, version: i32) -> Stat {
        Stat {
            czxid,
            mzxid: czxid + 7,
            pzxid: czxid + 3,
            ctime: 1_780_000_000_000,
            mtime: 1_780_000_000_450,
            version,
            cversion: 2,
            aversion: 0,
            ephemeral_owner: 0x1000_0abc_def0_0001,
            data_length: 5,
            num_children: 2,
        }
    }

    #[test]
    fn a_node_gives_back_its_stat_name_and_data() {
        let node = CachedNode::named("c-0001", b"hello", &stat(0x1_0000_0042, 4));
        assert_eq!(node.stat(), stat(0x1_0000_0042, 4));
        assert_eq!((node.name(), node.data()), ("c-0001", &b"hello"[..]));
        assert_eq!(node.zxids(), (0x1_0000_0042, 0x1_0000_0049));
        let bare = node.without_data();
        assert_eq!((bare.name(), bare.data(), bare.stat()), ("c-0001", &b""[..], stat(0x1_0000_0042, 4)));
        assert!(!format!("{node:?}").contains("hello"), "data stays out of Debug");
        // Extremes survive: the differences wrap and come back.
        let wild = Stat { czxid: i64::MAX, mzxid: i64::MIN, ctime: -1, mtime: i64::MAX, ..stat(0, i32::MIN) };
        assert_eq!(CachedNode::named("x", b"", &wild).stat(), wild);
    }

    #[test]
    fn a_typical_node_takes_few_bytes() {
        let node = CachedNode::named("c0042", &[7; 32], &stat(0x1_0000_0042, 4));
        assert!(node.0.len() <= 5 + 30 + 5 + 32, "{} bytes", node.0.len());
    }

    fn tree_of(paths: &[&str]) -> Tree {
        let mut tree = Tree::new("/r");
        for (i, path) in paths.iter().enumerate() {
            tree.put(path, &CachedNode::made(i as i64, i as i64, path.as_bytes())).unwrap();
        }
        tree
    }

    #[test]
    fn nodes_are_found_listed_and_removed_with_what_is_under_them() {
        let mut tree = tree_of(&["/r", "/r/a", "/r/a/x", "/r/a-b", "/r/b"]);
        assert_eq!(tree.len(), 5);
        assert_eq!(tree.get("/r/a/x").map(|n| n.data()), Some(&b"/r/a/x"[..]));
        assert_eq!(tree.get("/r/a/"), tree.get("/r/a"));
        assert!(tree.get("/ra").is_none() && tree.get("/other").is_none() && tree.get("/r/c").is_none());
        let names: Vec<_> = tree.children("/r").map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "a-b", "b"]);
        let paths: Vec<_> = tree.iter().map(|(p, _)| p).collect();
        assert_eq!(paths, ["/r", "/r/a", "/r/a/x", "/r/a-b", "/r/b"]);
        assert_eq!(tree.put("/r/c/d", &CachedNode::made(1, 1, b"")), Err(NoParent));
        let snapshot = tree.clone();
        let gone: Vec<_> = tree.remove("/r/a").into_iter().map(|(p, _)| p).collect();
        assert_eq!(gone, ["/r/a/x", "/r/a"], "children first");
        assert_eq!(tree.len(), 3);
        assert_eq!(snapshot.len(), 5, "a clone keeps what it had");
        assert!(snapshot.get("/r/a/x").is_some());
        assert!(tree.remove("/r/a").is_empty());
    }

    /// A chain of `depth` nodes below the root, made directly (a put walks from the root).
    fn chain(depth: usize) -> Tree {
        let mut below: Option<Arc<Dir>> = None;
        for _ in 0..depth {
            let entry = Entry { node: CachedNode::named("a", b"", &stat(1, 0)), children: below.take() };
            below = Some(Arc::new(Dir { chunks: vec![Arc::new(vec![entry])] }));
        }
        let root = Entry { node: CachedNode::named("", b"", &stat(1, 0)), children: below };
        Tree { root_path: "/".into(), root: Some(root), len: depth + 1 }
    }

    /// Hostile input: ZooKeeper allows paths of many thousand levels. Removing or dropping such
    /// a subtree recursed once per level and overflowed the stack (the process aborted). Run
    /// on a thread with a 64 KiB stack, which the recursion exhausted at this depth.
    #[test]
    fn a_deep_tree_is_removed_and_dropped_without_recursion() {
        let run = || {
            let depth = 3_000;
            let mut tree = chain(depth);
            let snapshot = tree.clone();
            let gone = tree.remove("/a");
            assert_eq!(gone.len(), depth);
            assert_eq!(gone.first().map(|(p, _)| p.len()), Some(2 * depth), "the deepest first");
            assert_eq!(gone.last().map(|(p, _)| p.as_str()), Some("/a"));
            drop(tree);
            assert_eq!(snapshot.len(), depth + 1, "a clone keeps what it shares");
            drop(snapshot);
            drop(chain(200_000)); // no paths built: deep enough for any stack
        };
        let thread = std::thread::Builder::new().stack_size(64 * 1024).spawn(run).unwrap();
        thread.join().unwrap();
    }

    proptest! {
        /// Any sequence of puts and removes leaves the copy equal to a map of paths, and every
        /// earlier clone equal to the map as it was.
        #[test]
        fn the_copy_equals_a_map_of_paths(ops in proptest::collection::vec((0u16..900, any::<bool>()), 1..800)) {
            let mut tree = Tree::new("/");
            tree.put("/", &CachedNode::made(0, 0, b"")).unwrap();
            let mut model = BTreeMap::from([("/".to_owned(), 0i64)]);
            let mut clones = Vec::new();
            for (i, (n, put)) in ops.into_iter().enumerate() {
                let path = format!("/p{}/c{n:03}", n % 2);
                let parent = format!("/p{}", n % 2);
                if put {
                    if let std::collections::btree_map::Entry::Vacant(vacant) = model.entry(parent) {
                        tree.put(vacant.key(), &CachedNode::made(0, 0, b"")).unwrap();
                        vacant.insert(0);
                    }
                    tree.put(&path, &CachedNode::made(i as i64, i as i64, b"")).unwrap();
                    model.insert(path, i as i64);
                } else {
                    let gone = tree.remove(&path);
                    prop_assert_eq!(gone.len(), usize::from(model.remove(&path).is_some()));
                }
                if i % 50 == 0 {
                    clones.push((tree.clone(), model.clone()));
                }
            }
            clones.push((tree, model));
            for (tree, model) in clones {
                prop_assert_eq!(tree.len(), model.len());
                let mut seen: Vec<(String, i64)> = tree.iter().map(|(p, n)| (p, n.zxids().1)).collect();
                seen.sort();
                prop_assert_eq!(seen, model.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
