//! The operations: what runs on a session, under the retry loop that runs them (Curator's
//! `RetryLoop`, in `retry_loop`): reads and writes (`crud`), creates with their options
//! (`create`, `nodes`), protected create (`protected`), batched reads (`reads`) and
//! transactions (`transaction`). Each is an `impl ZkClient` block or a builder on one.

pub(crate) mod create;
pub(crate) mod crud;
pub(crate) mod nodes;
pub mod protected;
pub(crate) mod reads;
pub(crate) mod retry_loop;
pub(crate) mod transaction;
