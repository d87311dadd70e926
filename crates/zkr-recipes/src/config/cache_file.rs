//! The last-known-good file: the latest live snapshot, kept on local disk so that a process
//! can start when ZooKeeper cannot be reached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{Codec, ConfigError, ConfigSnapshot, Versioned};

#[derive(Debug, Serialize, Deserialize)]
struct FileEntry {
    version: i32,
    mzxid: i64,
    data: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
struct File {
    /// The watched path, so that a file is not used for another.
    path: String,
    entries: BTreeMap<String, FileEntry>,
}

fn error(file: &Path, reason: impl ToString) -> ConfigError {
    ConfigError::CacheFile { file: file.to_owned(), reason: reason.to_string() }
}

/// Loads a snapshot written for `path`, decoding every entry (entries that no longer decode
/// are left out). `Ok(None)` when there is no file.
pub(crate) fn load<T: 'static>(
    file: &Path,
    path: &str,
    codec: &dyn Codec<T>,
) -> Result<Option<BTreeMap<String, Versioned<T>>>, ConfigError> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(file, e)),
    };
    let parsed: File = serde_json::from_slice(&bytes).map_err(|e| error(file, e))?;
    if parsed.path != path {
        return Err(error(file, format!("written for {}, not {path}", parsed.path)));
    }
    let mut entries = BTreeMap::new();
    for (key, entry) in parsed.entries {
        match codec.decode(&entry.data) {
            Ok(value) => {
                entries.insert(key, Versioned::from_parts(value, entry.data, entry.version, entry.mzxid));
            }
            Err(e) => tracing::warn!(key, error = %e, "a cached config value no longer decodes; left out"),
        }
    }
    Ok(Some(entries))
}

/// Writes `snapshot` atomically (a temporary file, then a rename).
fn store<T>(file: &Path, path: &str, snapshot: &ConfigSnapshot<T>) -> Result<(), ConfigError> {
    let entries = snapshot
        .entries
        .iter()
        .map(|(k, v)| (k.clone(), FileEntry { version: v.version, mzxid: v.mzxid, data: v.raw.to_vec() }))
        .collect();
    let bytes = serde_json::to_vec(&File { path: path.to_owned(), entries }).map_err(|e| error(file, e))?;
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| error(&tmp, e))?;
    std::fs::rename(&tmp, file).map_err(|e| error(file, e))
}

/// Writes every live snapshot to `file`, the latest one first when several come quickly,
/// until the watcher is dropped.
pub(crate) async fn keep_writing<T: Send + Sync + 'static>(
    file: PathBuf,
    path: String,
    mut snapshots: watch::Receiver<Arc<ConfigSnapshot<T>>>,
) {
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        if !snapshot.stale {
            let (file, path) = (file.clone(), path.clone());
            let written = tokio::task::spawn_blocking(move || store(&file, &path, &snapshot)).await;
            match written {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "could not write the last-known-good config file"),
                Err(e) => tracing::warn!(error = %e, "the last-known-good writer failed"),
            }
        }
        if snapshots.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Json;

    fn snapshot(entries: &[(&str, u32, i64)]) -> ConfigSnapshot<u32> {
        let entries = entries
            .iter()
            .map(|(k, v, mzxid)| {
                (k.to_string(), Versioned::from_parts(*v, v.to_string().into_bytes(), 3, *mzxid))
            })
            .collect();
        ConfigSnapshot { entries, stale: false }
    }

    #[test]
    fn a_snapshot_survives_the_file_and_only_for_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lkg.json");
        assert!(load::<u32>(&file, "/config", &Json).unwrap().is_none(), "no file yet");
        store(&file, "/config", &snapshot(&[("a", 1, 10), ("b/c", 2, 11)])).unwrap();
        let loaded = load::<u32>(&file, "/config", &Json).unwrap().unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!((*loaded["b/c"].value, loaded["b/c"].version, loaded["b/c"].mzxid), (2, 3, 11));
        assert!(matches!(load::<u32>(&file, "/other", &Json), Err(ConfigError::CacheFile { .. })));
        // An entry that no longer decodes (the type changed) is left out, not fatal.
        let as_text = load::<String>(&file, "/config", &Json).unwrap().unwrap();
        assert!(as_text.is_empty());
        std::fs::write(&file, b"garbage").unwrap();
        assert!(matches!(load::<u32>(&file, "/config", &Json), Err(ConfigError::CacheFile { .. })));
    }
}
