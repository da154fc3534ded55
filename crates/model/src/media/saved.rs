//! The prepared copies on disk: saved under `$HEARTH_HOME/media` by their
//! hash (the same image twice is one file, and a retried turn writes
//! nothing new), and read back as base64 for a request; the same for the
//! PDFs sent to a model as files.
//!
//! Nothing is cached in memory: reading and encoding a copy costs about a
//! millisecond, small beside a model call, while a cache would hold
//! megabytes in an idle daemon. A copy is checked against the hash the
//! conversation recorded, so a file changed since is never sent.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use ring::digest::{SHA256, digest};

use super::{ImageError, Limits, Prepared, prepare};
use crate::llm::types::{Image, Pdf};

/// Saves `prepared` in `dir`; returns its path and SHA-256 (hex).
pub fn save(dir: &Path, prepared: &Prepared) -> Result<(PathBuf, String), ImageError> {
    let extension = match prepared.media_type {
        "image/png" => "png",
        _ => "jpg",
    };
    save_bytes(dir, &prepared.bytes, extension).map_err(ImageError::Io)
}

/// Saves `bytes` in `dir` as `<sha256>.<extension>`, once (a PDF sent as
/// a file is kept as an image is); returns its path and SHA-256 (hex), or
/// why not, naming the file.
pub fn save_bytes(dir: &Path, bytes: &[u8], extension: &str) -> Result<(PathBuf, String), String> {
    let sha256 = hex(digest(&SHA256, bytes).as_ref());
    let path = dir.join(format!("{sha256}.{extension}"));
    let io = |e: std::io::Error| format!("cannot save {}: {e}", path.display());
    let same = std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64);
    if !same {
        std::fs::create_dir_all(dir).map_err(io)?;
        write_atomically(&path, bytes).map_err(io)?;
    }
    Ok((path, sha256))
}

/// Fills in `pdf.data` (for a request) from the saved copy it names, once
/// its content is checked against its hash; else says why not.
pub fn encoded_pdf(pdf: &mut Pdf) -> Result<(), String> {
    let bytes = std::fs::read(&pdf.path).map_err(|e| format!("cannot read {}: {e}", pdf.path))?;
    if hex(digest(&SHA256, &bytes).as_ref()) != pdf.sha256 {
        return Err(format!("{} has changed since it was saved", pdf.path));
    }
    pdf.data = Some(
        base64::engine::general_purpose::STANDARD
            .encode(&bytes)
            .into(),
    );
    Ok(())
}

/// Fills in `image.data` (for a request) from the prepared copy it names,
/// once its content is checked against its hash. A copy made under larger
/// limits than `limits` (the config changed since) is prepared again, in
/// memory, and `image` describes that one.
pub fn encoded(image: &mut Image, limits: &Limits) -> Result<(), ImageError> {
    let mut bytes = std::fs::read(&image.path)
        .map_err(|e| ImageError::Io(format!("cannot read {}: {e}", image.path)))?;
    if hex(digest(&SHA256, &bytes).as_ref()) != image.sha256 {
        return Err(ImageError::Io(format!(
            "{} has changed since it was saved",
            image.path
        )));
    }
    if !limits.holds(image.width, image.height) || bytes.len() > limits.bytes {
        let smaller = prepare(&bytes, limits)?;
        (image.width, image.height) = (smaller.width, smaller.height);
        image.media_type = smaller.media_type.to_owned();
        bytes = smaller.bytes;
    }
    image.data = Some(
        base64::engine::general_purpose::STANDARD
            .encode(&bytes)
            .into(),
    );
    Ok(())
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per call: two agents may save the same image at once.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
