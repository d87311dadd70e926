#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
//!
//! Real Apache ZooKeeper servers for tests, examples and demos: the Rust counterpart of
//! Curator's `curator-test`, except that it runs the real Java server (a release from Maven Central, or Debian's) as
//! child processes instead of in-process.
//!
//! Start with [`TestingServer::start`] for one server or [`TestingCluster::start`] for an
//! ensemble; use [`shared_server`] to share one server across the tests of a binary (give each
//! test its own root path). Faults: [`TestingServer::stop`]/[`restart`](TestingServer::restart),
//! [`TestingCluster::kill`]/[`pause`](TestingCluster::pause), [`expire_session`] for a real
//! server-side session expiry, and [`FaultProxy`] to cut or partition connections;
//! [`cancel_at_every_await`] drops a future at each of its awaits in turn. [`Timing`]
//! scales test timeouts on slow machines. [`peers`] runs Apache Curator and kazoo as peer
//! processes, for interop tests and side-by-side benchmarks.
//!
//! The server runs the [`Release`] a test asks for ([`ServerOptions::release`]) or the run
//! does (`ZKR_ZK_VERSION`; [`DEFAULT_RELEASE`] otherwise): ZooKeeper 3.5 to 3.9 from Maven
//! Central, resolved with `mvn` on first use, or Debian's packaged 3.8.0 (`debian`); see
//! [`Installation`].
//!
//! No JVM outlives the process that started it: each server runs in its own process group,
//! is killed on drop, and a wrapper kills it (and removes its files) when the parent dies.

mod cancel;
mod cluster;
mod commands;
mod error;
mod four_letter;
mod install;
mod kerberos;
mod maven;
mod member;
mod netns;
mod options;
pub mod peers;
mod proc_status;
mod process;
mod proxy;
mod release;
mod server;
mod session;
mod timing;
mod tls;

pub use cancel::{cancel_at_every_await, MAX_POLLS, RUN_BOUND};
pub use cluster::{ServerInfo, TestingCluster};
pub use commands::{INSTALL_COMMAND, KERBEROS_INSTALL_COMMAND, MAVEN_INSTALL_COMMAND};
pub use error::{Error, Result};
pub use four_letter::{four_letter_word, parse_mntr};
pub use install::Installation;
pub use kerberos::{KerberosRealm, SERVICE_HOST as KERBEROS_SERVICE_HOST};
pub use options::{ServerOptions, JVM_OPTIONS_ENV};
pub use proc_status::proc_status_kib;
pub use proxy::{FaultProxy, Latency, ProxyMode};
pub use release::{Release, DEFAULT_RELEASE, RELEASES, RELEASE_ENV};
pub use server::{env_or_embedded, shared_server, TestingServer};
pub use session::{expire_session, expire_session_id, probe_session};
pub use timing::{Timing, TIMING_MULTIPLIER_ENV};
pub use tls::TestCertificates;
