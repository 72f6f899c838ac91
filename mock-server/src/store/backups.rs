//! Snapshots of day databases on disk (`BACKUP_DIR`): a directory per database, and per snapshot
//! a gzip-compressed JSON file of every document with its revision, then its manifest (count and
//! SHA-256 of the uncompressed JSON). Each file is written under a temporary name and renamed, the
//! manifest last, so a snapshot cut short by a crash is never taken for one (and is cleaned up by
//! the next prune).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub db: String,
    /// `{takenAt, 13 digits}-{updateSeq}`: sorts by time.
    pub snapshot_id: String,
    pub taken_at: i64,
    /// The database's `update_seq` when it was read.
    pub update_seq: u64,
    pub doc_count: u64,
    pub checksum: String,
    /// SHA-256 of the sorted `id@rev` lines: what the database held, whatever its `update_seq`
    /// (a restored database counts its sequence anew); any later write changes it.
    pub revs: String,
}

/// The `revs` fingerprint of `(id, rev)` pairs.
pub fn revs_fingerprint(mut pairs: Vec<(String, String)>) -> String {
    pairs.sort();
    let mut hash = Sha256::new();
    for (id, rev) in pairs {
        hash.update(format!("{id}@{rev}\n"));
    }
    hex::encode(hash.finalize())
}

fn db_dir(root: &Path, db: &str) -> PathBuf {
    root.join(db)
}

fn data_file(root: &Path, db: &str, id: &str) -> PathBuf {
    db_dir(root, db).join(format!("{id}.json.gz"))
}

fn manifest_file(root: &Path, db: &str, id: &str) -> PathBuf {
    db_dir(root, db).join(format!("{id}.manifest.json"))
}

fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}

/// Why a snapshot could not be written, read or trusted.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("snapshot file {}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("snapshot file {} is not the JSON it should be", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("snapshot {}: {what}", path.display())]
    Mismatch { path: PathBuf, what: String },
    #[error("{db} has no snapshot {id:?}")]
    NoSnapshot { db: String, id: String },
    #[error("{db} has no verified snapshot under {}", dir.display())]
    NoVerifiedSnapshot { db: String, dir: PathBuf },
}

fn checksum(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes a snapshot of `docs` (each with `_id` and `_rev`) and answers its manifest.
pub fn write(root: &Path, db: &str, taken_at: i64, update_seq: u64, docs: &[Value]) -> Result<Manifest, BackupError> {
    let dir = db_dir(root, db);
    let fail = |e: std::io::Error| BackupError::Io { path: dir.clone(), source: e };
    fs::create_dir_all(&dir).map_err(fail)?;
    let json = serde_json::to_vec(&json!({ "db": db, "docs": docs }))
        .map_err(|e| BackupError::Json { path: dir.clone(), source: e })?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&json).map_err(fail)?;
    let compressed = gz.finish().map_err(fail)?;
    let id = format!("{taken_at:013}-{update_seq}");
    let pairs = docs
        .iter()
        .map(|d| (d["_id"].as_str().unwrap_or("").to_owned(), d["_rev"].as_str().unwrap_or("").to_owned()))
        .collect();
    let revs = revs_fingerprint(pairs);
    let manifest = Manifest {
        db: db.to_owned(),
        snapshot_id: id.clone(),
        taken_at,
        update_seq,
        doc_count: docs.len() as u64,
        checksum: checksum(&json),
        revs,
    };
    write_whole(&data_file(root, db, &id), &compressed).map_err(fail)?;
    write_whole(
        &manifest_file(root, db, &id),
        &serde_json::to_vec(&manifest).map_err(|e| BackupError::Json { path: dir.clone(), source: e })?,
    )
    .map_err(fail)?;
    Ok(manifest)
}

/// The database's complete snapshots (those with a manifest), oldest first.
pub fn list(root: &Path, db: &str) -> Result<Vec<Manifest>, BackupError> {
    let dir = db_dir(root, db);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(BackupError::Io { path: dir, source: e }),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.to_string_lossy().ends_with(".manifest.json") {
            let text = fs::read(&path).map_err(|e| BackupError::Io { path: path.clone(), source: e })?;
            out.push(
                serde_json::from_slice::<Manifest>(&text)
                    .map_err(|e| BackupError::Json { path: path.clone(), source: e })?,
            );
        }
    }
    out.sort_by(|a, b| a.snapshot_id.cmp(&b.snapshot_id));
    Ok(out)
}

/// The snapshot's documents, after checking them against its manifest (checksum and count).
pub fn read_verified(root: &Path, manifest: &Manifest) -> Result<Vec<Value>, BackupError> {
    let path = data_file(root, &manifest.db, &manifest.snapshot_id);
    let compressed = fs::read(&path).map_err(|e| BackupError::Io { path: path.clone(), source: e })?;
    let mut json = Vec::new();
    GzDecoder::new(&compressed[..])
        .read_to_end(&mut json)
        .map_err(|e| BackupError::Io { path: path.clone(), source: e })?;
    if checksum(&json) != manifest.checksum {
        return Err(BackupError::Mismatch { path, what: "its checksum does not match its manifest".into() });
    }
    let mut body: Value =
        serde_json::from_slice(&json).map_err(|e| BackupError::Json { path: path.clone(), source: e })?;
    let docs = match body["docs"].take() {
        Value::Array(docs) => docs,
        _ => return Err(BackupError::Mismatch { path, what: "it holds no documents".into() }),
    };
    if docs.len() as u64 != manifest.doc_count {
        return Err(BackupError::Mismatch {
            path,
            what: format!("{} documents, its manifest says {}", docs.len(), manifest.doc_count),
        });
    }
    Ok(docs)
}

/// Keeps the newest `keep` snapshots of the database; removes the others and any data file left
/// without a manifest. Answers the snapshot ids it removed.
pub fn prune(root: &Path, db: &str, keep: usize) -> Result<Vec<String>, BackupError> {
    let snapshots = list(root, db)?;
    let cut = snapshots.len().saturating_sub(keep);
    let mut pruned = Vec::new();
    for m in &snapshots[..cut] {
        for path in [manifest_file(root, db, &m.snapshot_id), data_file(root, db, &m.snapshot_id)] {
            fs::remove_file(&path)
                .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
                .map_err(|e| BackupError::Io { path: path.clone(), source: e })?;
        }
        pruned.push(m.snapshot_id.clone());
    }
    let kept: Vec<&str> = snapshots[cut..].iter().map(|m| m.snapshot_id.as_str()).collect();
    if let Ok(entries) = fs::read_dir(db_dir(root, db)) {
        for path in entries.flatten().map(|e| e.path()) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let id = name.split('.').next().unwrap_or("");
            if !name.ends_with(".manifest.json") && !kept.contains(&id) {
                let _ = fs::remove_file(&path);
            }
        }
    }
    Ok(pruned)
}
