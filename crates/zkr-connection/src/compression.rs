//! Curator's `GzipCompressionProvider`: gzip, as `java.util.zip` reads and writes it, for
//! [`ZkClientBuilder::compression`](crate::ZkClientBuilder::compression) and for recipes that
//! offer it.
//!
//! What one node's data may inflate to is capped ([`DEFAULT_MAX_DECOMPRESSED_LEN`], or the
//! client's [`ZkClientBuilder::max_decompressed_len`](crate::ZkClientBuilder::max_decompressed_len)):
//! a node holds at most 1 MiB, but a gzip member of 100 KiB can inflate to 100 MiB, and one of
//! 1 MiB to a gigabyte.

use std::io::{Read as _, Write as _};

use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::{Error, Result};

/// What one node's gzip data may inflate to unless told otherwise: 16 MiB, sixteen times the
/// most a node holds ([`MAX_DATA_LEN`](crate::MAX_DATA_LEN), ZooKeeper's default
/// `jute.maxbuffer`), which Curator's compressed values stay well within.
///
/// # Examples
///
/// ```
/// use zkr_connection::compression::{compress, decompress, DEFAULT_MAX_DECOMPRESSED_LEN};
///
/// let bomb = compress(&vec![0; DEFAULT_MAX_DECOMPRESSED_LEN + 1]);
/// assert!(matches!(decompress("/x", &bomb), Err(zkr_connection::Error::DecompressedTooLarge { .. })));
/// ```
pub const DEFAULT_MAX_DECOMPRESSED_LEN: usize = 16 << 20;

/// `data` compressed as Curator's `GzipCompressionProvider` does (one gzip member, default
/// level), which Curator and any gzip reader decompress.
///
/// # Examples
///
/// ```
/// let packed = zkr_connection::compression::compress(b"hello hello hello");
/// assert_eq!(&packed[..2], &[0x1f, 0x8b]);
/// assert_eq!(zkr_connection::compression::decompress("/x", &packed).unwrap(), b"hello hello hello");
/// ```
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 2 + 20), Compression::default());
    // Writing to a Vec cannot fail.
    encoder.write_all(data).and_then(|()| encoder.finish()).unwrap_or_default()
}

/// Decompresses what Curator's `GzipCompressionProvider` (or [`compress`]) wrote at `path`,
/// up to [`DEFAULT_MAX_DECOMPRESSED_LEN`] bytes: [`decompress_limited`] with that cap.
///
/// # Errors
/// As [`decompress_limited`].
///
/// # Examples
///
/// ```
/// let error = zkr_connection::compression::decompress("/x", b"plain").unwrap_err();
/// assert!(matches!(error, zkr_connection::Error::Decompress { .. }));
/// ```
pub fn decompress(path: &str, data: &[u8]) -> Result<Vec<u8>> {
    decompress_limited(path, data, DEFAULT_MAX_DECOMPRESSED_LEN)
}

/// Decompresses what Curator's `GzipCompressionProvider` (or [`compress`]) wrote at `path`,
/// refusing it as soon as more than `max` bytes come out: never more than about `max` bytes
/// are held, whatever the data inflates to.
///
/// # Errors
/// [`Error::DecompressedTooLarge`] when the data inflates to more than `max` bytes;
/// [`Error::Decompress`] when `data` is not one whole gzip member (uncompressed data, a
/// corrupt or truncated member, or bytes after it).
///
/// # Examples
///
/// ```
/// use zkr_connection::compression::{compress, decompress_limited};
///
/// let packed = compress(&[b'a'; 1000]);
/// assert_eq!(decompress_limited("/x", &packed, 1000).unwrap().len(), 1000);
/// let error = decompress_limited("/x", &packed, 999).unwrap_err();
/// assert!(matches!(error, zkr_connection::Error::DecompressedTooLarge { max: 999, .. }));
/// ```
pub fn decompress_limited(path: &str, data: &[u8], max: usize) -> Result<Vec<u8>> {
    let failed = |source| Error::Decompress { path: path.to_owned(), source: std::sync::Arc::new(source) };
    let mut decoder = GzDecoder::new(data);
    let mut out = Vec::with_capacity(data.len().saturating_mul(3).min(max));
    // One byte past the cap says that there is more; the decoder inflates no further.
    let past_max = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    (&mut decoder).take(past_max).read_to_end(&mut out).map_err(failed)?;
    if out.len() > max {
        return Err(Error::DecompressedTooLarge { path: path.to_owned(), max });
    }
    // As Curator's: one member, nothing after it.
    let rest = decoder.into_inner();
    if !rest.is_empty() {
        return Err(failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "bytes after the gzip member",
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::kind::Classify as _;
    use proptest::prelude::*;

    use super::*;

    /// Curator's compression of empty data (`COMPRESSED_EMPTY_BYTES`, OS byte 0 as on Java
    /// before 16, 255 after).
    #[test]
    fn curators_empty_data_decompresses_to_nothing() {
        for os in [0u8, 0xff] {
            let empty = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, os, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            assert_eq!(decompress("/e", &empty).unwrap(), b"");
        }
        assert_eq!(decompress("/e", &compress(b"")).unwrap(), b"");
    }

    #[test]
    fn garbage_truncation_and_trailing_bytes_are_errors() {
        let packed = compress(b"some data some data");
        assert!(decompress("/x", &packed[..packed.len() - 3]).is_err());
        let mut trailing = packed.clone();
        trailing.push(0);
        assert!(decompress("/x", &trailing).is_err());
        let mut corrupt = packed;
        let last = corrupt.len() - 5;
        corrupt[last] ^= 0xff; // the CRC
        assert!(decompress("/x", &corrupt).is_err());
        assert!(decompress("/x", b"").is_err());
    }

    /// `len` zeros gzip-compressed, made a MiB at a time (never holding the `len` bytes).
    fn zeros_compressed(len: usize) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..len >> 20 {
            encoder.write_all(&zeros).unwrap();
        }
        encoder.finish().unwrap()
    }

    /// The process's peak resident memory in KiB since the last reset (Linux: `VmHWM`).
    fn peak_rss_kib() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
        line.trim().trim_end_matches("kB").trim().parse().ok()
    }

    /// A small gzip member that inflates to 100 MiB is refused, and refused without being
    /// inflated: the peak resident memory grows by far less than 100 MiB.
    #[test]
    fn a_gzip_bomb_is_refused_without_being_inflated() {
        let bomb = zeros_compressed(100 << 20);
        assert!(bomb.len() < 200 << 10, "{} bytes", bomb.len());
        // Resets the peak to the current size (Linux 4.0+), where allowed.
        let measured = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = peak_rss_kib();
        let refused = decompress("/bomb", &bomb);
        let grown = peak_rss_kib().zip(before).map(|(after, before)| after.saturating_sub(before));
        assert!(
            matches!(&refused, Err(Error::DecompressedTooLarge { path, max: DEFAULT_MAX_DECOMPRESSED_LEN }) if path == "/bomb"),
            "{:?}",
            refused.as_ref().map(Vec::len)
        );
        if let (true, Some(grown)) = (measured, grown) {
            assert!(grown < 48 << 10, "the peak resident memory grew by {grown} KiB");
        }
    }

    #[test]
    fn the_cap_is_exact_and_the_error_names_it() {
        let packed = compress(&[7u8; 4096]);
        assert_eq!(decompress_limited("/c", &packed, 4096).unwrap(), [7u8; 4096]);
        assert_eq!(decompress_limited("/c", &packed, usize::MAX).unwrap().len(), 4096);
        let refused = decompress_limited("/c", &packed, 4095).unwrap_err();
        assert!(matches!(&refused, Error::DecompressedTooLarge { max: 4095, .. }), "{refused:?}");
        assert_eq!(
            refused.to_string(),
            "the data at /c inflates to more than 4095 bytes (the cap on decompressed data)"
        );
        assert_eq!(refused.kind(), crate::kind::ErrorKind::Other);
    }

    proptest! {
        #[test]
        fn compress_then_decompress_is_the_identity(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            prop_assert_eq!(decompress("/p", &compress(&data)).unwrap(), data);
        }
    }
}
