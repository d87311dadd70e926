//! Readable traces of a checker's [`Path`](stateright::Path): who sent what, on which session, what the server
//! did, what each user made of it.

use std::fmt::Write as _;

use crate::world::{Action, Checked, Message, Recipe, State};
use crate::zk::{Op, OpResult, Reply, Request};

/// A path of the world's states and actions, as stateright reports a discovery.
pub type WorldPath<R> = stateright::Path<State<R>, Action>;

/// One line per step of `path`, numbered.
pub fn render<R: Recipe>(_model: &Checked<R>, path: &WorldPath<R>) -> String {
    render_steps(&path.clone().into_vec())
}

/// One line per step, numbered: each state with the action taken from it.
pub fn render_steps<R: Recipe>(steps: &[(State<R>, Option<Action>)]) -> String {
    let mut out = String::new();
    for (i, pair) in steps.windows(2).enumerate() {
        let (before, action) = &pair[0];
        let after = &pair[1].0;
        if let Some(action) = action {
            let _ = writeln!(out, "{:>3}. {}", i + 1, describe(before, *action, after));
        }
    }
    if let Some((last, _)) = steps.last() {
        let _ = writeln!(out, "     end: {}", users(last));
    }
    out
}

/// Every user's state, on one line.
fn users<R: Recipe>(state: &State<R>) -> String {
    let all: Vec<String> =
        state.users.iter().enumerate().map(|(u, s)| format!("u{u}={:?}", s.user)).collect();
    all.join("; ")
}

fn describe<R: Recipe>(before: &State<R>, action: Action, after: &State<R>) -> String {
    let sid = |c: u8| before.clients[usize::from(c)].sid;
    match action {
        Action::Step(u) => {
            let slot = &before.users[usize::from(u)];
            let c = slot.client;
            let client = &after.clients[usize::from(c)];
            let sent = client.outbox.len() > before.clients[usize::from(c)].outbox.len();
            let what = match client.outbox.last() {
                Some((_, request)) if sent => format!("sends {} on s{}", request_text(request), sid(c)),
                _ => "steps".to_string(),
            };
            format!("u{u} (c{c}) {what}: {:?}", after.users[usize::from(u)].user)
        }
        Action::Serve(c) => {
            let (u, request) = &before.clients[usize::from(c)].outbox[0];
            let reply =
                after.clients[usize::from(c)].inbox.last().map(|(_, m)| message_text(m)).unwrap_or_default();
            format!("server applies u{u}'s {} on s{} -> {reply}", request_text(request), sid(c))
        }
        Action::ServeLate(c, back) => {
            let (u, request) = &before.clients[usize::from(c)].outbox[0];
            let at = before.server.kept(back).unwrap_or_default();
            let client = &after.clients[usize::from(c)];
            let reply = client
                .inbox
                .iter()
                .rev()
                .find_map(|(_, m)| matches!(m, Message::Reply(..)).then(|| message_text(m)))
                .unwrap_or_default();
            format!(
                "a server lagging at zxid {at} (now {}) answers u{u}'s {} on s{} -> {reply}",
                before.server.zxid,
                request_text(request),
                sid(c)
            )
        }
        Action::Deliver(c) => {
            let (u, message) = &before.clients[usize::from(c)].inbox[0];
            format!(
                "u{u} (c{c}, s{}) reads {}: {:?}",
                sid(c),
                message_text(message),
                after.users[usize::from(*u)].user
            )
        }
        Action::Drop(c) => format!("FAULT: c{c}'s connection drops (s{} lives on)", sid(c)),
        Action::Expire(c) => format!("FAULT: c{c}'s session s{} expires", sid(c)),
        Action::Restart => "FAULT: the server restarts (every connection drops)".to_string(),
        Action::Reconnect(c) => {
            let new = after.clients[usize::from(c)].sid;
            if new == sid(c) {
                format!("c{c} reconnects to s{new}")
            } else {
                format!("c{c} reconnects: s{} expired, new session s{new}", sid(c))
            }
        }
        Action::Reap(path) => format!("server reaps the empty container {path}"),
        Action::CatchUp(c) => {
            let fired = &after.clients[usize::from(c)].inbox[before.clients[usize::from(c)].inbox.len()..];
            let events: Vec<String> =
                fired.iter().map(|(u, m)| format!("u{u}: {}", message_text(m))).collect();
            format!("c{c}'s lagging server catches up, its late watches set [{}]", events.join(", "))
        }
    }
}

fn version(v: &Option<u8>) -> String {
    v.map(|v| format!(" @v{v}")).unwrap_or_default()
}

fn op_text(op: &Op) -> String {
    match op {
        Op::Create { path, mode, data } => format!("create {path} {mode:?} data={data}"),
        Op::Delete { path, version: v } => format!("delete {path}{}", version(v)),
        Op::SetData { path, data, version: v } => format!("set {path}={data}{}", version(v)),
        Op::Check { path, version: v } => format!("check {path}{}", version(v)),
    }
}

/// A request, briefly.
pub fn request_text(request: &Request) -> String {
    let watch = |w: &bool| if *w { " +watch" } else { "" };
    match request {
        Request::Write(op) => op_text(op),
        Request::Multi(ops) => format!("multi[{}]", ops.iter().map(op_text).collect::<Vec<_>>().join(", ")),
        Request::GetData { path, watch: w } => format!("getData {path}{}", watch(w)),
        Request::Exists { path, watch: w } => format!("exists {path}{}", watch(w)),
        Request::Children { path, watch: w } => format!("getChildren {path}{}", watch(w)),
        Request::Sync(path) => format!("sync {path}"),
        Request::AddWatch { path, recursive } => {
            format!("addWatch {path} {}", if *recursive { "recursive" } else { "persistent" })
        }
        Request::ChildrenData { path, watch: w } => format!("getChildren+data {path}{}", watch(w)),
    }
}

fn result_text(result: &OpResult) -> String {
    match result {
        OpResult::Created(path, stat) => format!("created {path} (czxid {})", stat.czxid),
        OpResult::Done(Some(stat)) => format!("ok v{}", stat.version),
        OpResult::Done(None) => "ok".to_string(),
    }
}

/// A reply or an event, briefly.
pub fn message_text(message: &Message) -> String {
    match message {
        Message::Event(event) => format!("event {:?} {}", event.kind, event.path),
        Message::Reply(reply, _) => match reply {
            Reply::Write(result) => result_text(result),
            Reply::Multi(results) => {
                format!("multi ok [{}]", results.iter().map(result_text).collect::<Vec<_>>().join(", "))
            }
            Reply::MultiFailed(index, error) => format!("multi failed at op {index}: {error:?}"),
            Reply::Data(data, stat) => format!("data={data} v{} czxid {}", stat.version, stat.czxid),
            Reply::Exists(stat) => format!(
                "exists: {}",
                stat.map_or("no".to_string(), |s| format!("v{} czxid {}", s.version, s.czxid))
            ),
            Reply::Children(children) => {
                let names: Vec<String> =
                    children.iter().map(|(n, s)| format!("{n}(czxid {})", s.czxid)).collect();
                format!("children [{}]", names.join(", "))
            }
            Reply::ChildrenData(children) => {
                let names: Vec<String> =
                    children.iter().map(|(n, s, d)| format!("{n}(czxid {}, data {d})", s.czxid)).collect();
                format!("children [{}]", names.join(", "))
            }
            Reply::Synced => "synced".to_string(),
            Reply::Watching => "watching".to_string(),
            Reply::Err(error) => format!("error {error:?}"),
        },
    }
}
