//! The model server's watches: one-shot ones fire once, persistent ones stay, recursive ones
//! cover the nodes below, and a dropped connection takes the persistent ones (ZooKeeper's
//! `WatchManager` and `DataTree.setWatches`, as `zk.rs` says).

use zkr_model::zk::{Event, EventKind, Mode, Name, Op, Path, Request, Server};

const DIR: Path = Path::top("dir");
const A: Path = DIR.child(Name::Fixed("a"));

fn write(server: &mut Server, op: Op) -> Vec<(u8, EventKind, Path)> {
    let (_, fired) = server.apply(1, 0, &Request::Write(op));
    fired.into_iter().map(|(_, user, Event { path, kind, .. })| (user, kind, path)).collect()
}

fn create(path: Path) -> Op {
    Op::Create { path, mode: Mode::Persistent, data: 0 }
}

fn set(path: Path) -> Op {
    Op::SetData { path, data: 1, version: None }
}

fn delete(path: Path) -> Op {
    Op::Delete { path, version: None }
}

fn server_watching(watches: &[Request]) -> Server {
    let mut server = Server::new(&[(DIR, Mode::Persistent, 0)]);
    let sid = server.open_session();
    for (user, request) in watches.iter().enumerate() {
        server.apply(sid, user as u8, request);
    }
    server
}

#[test]
fn a_recursive_watch_reports_every_change_below_and_stays() {
    let mut server = server_watching(&[Request::AddWatch { path: DIR, recursive: true }]);
    assert_eq!(write(&mut server, create(A)), vec![(0, EventKind::Created, A)]);
    assert_eq!(write(&mut server, set(A)), vec![(0, EventKind::DataChanged, A)]);
    assert_eq!(write(&mut server, set(DIR)), vec![(0, EventKind::DataChanged, DIR)]);
    assert_eq!(write(&mut server, delete(A)), vec![(0, EventKind::Deleted, A)]);
}

#[test]
fn a_persistent_watch_reports_its_nodes_data_and_children_and_stays() {
    let mut server = server_watching(&[Request::AddWatch { path: DIR, recursive: false }]);
    assert_eq!(write(&mut server, create(A)), vec![(0, EventKind::ChildrenChanged, DIR)]);
    assert_eq!(write(&mut server, set(A)), vec![]);
    assert_eq!(write(&mut server, set(DIR)), vec![(0, EventKind::DataChanged, DIR)]);
    assert_eq!(write(&mut server, delete(A)), vec![(0, EventKind::ChildrenChanged, DIR)]);
}

#[test]
fn a_one_shot_watch_fires_once_and_a_node_deleted_fires_a_persistent_watch_once() {
    let watches = [
        Request::GetData { path: DIR, watch: true },
        Request::AddWatch { path: DIR, recursive: false },
        Request::Children { path: DIR, watch: true },
    ];
    let mut server = server_watching(&watches);
    assert_eq!(
        write(&mut server, set(DIR)),
        vec![(0, EventKind::DataChanged, DIR), (1, EventKind::DataChanged, DIR)]
    );
    assert_eq!(write(&mut server, set(DIR)), vec![(1, EventKind::DataChanged, DIR)]);
    assert_eq!(
        write(&mut server, delete(DIR)),
        vec![(1, EventKind::Deleted, DIR), (2, EventKind::Deleted, DIR)]
    );
}

#[test]
fn a_dropped_connection_takes_the_persistent_watches_and_leaves_the_one_shot_ones() {
    let watches =
        [Request::AddWatch { path: DIR, recursive: true }, Request::Exists { path: A, watch: true }];
    let mut server = server_watching(&watches);
    server.disconnect(1);
    assert_eq!(write(&mut server, create(A)), vec![(1, EventKind::Created, A)]);
    assert_eq!(write(&mut server, set(A)), vec![]);
}
