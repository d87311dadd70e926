//! Curator's `GzipCompressionProvider`: gzip, as `java.util.zip` reads and writes it, for
//! [`ZkClientBuilder::compression`](crate::ZkClientBuilder::compression) and for recipes that
//! offer it.

use std::io::{Read as _, Write as _};

use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::error::{Error, Result};

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

/// Decompresses what Curator's `GzipCompressionProvider` (or [`compress`]) wrote at `path`.
///
/// # Errors
/// [`Error::Decompress`] when `data` is not one whole gzip member (uncompressed data, a
/// corrupt or truncated member, or bytes after it).
///
/// # Examples
///
/// ```
/// let error = zkr_connection::compression::decompress("/x", b"plain").unwrap_err();
/// assert!(matches!(error, zkr_connection::Error::Decompress { .. }));
/// ```
pub fn decompress(path: &str, data: &[u8]) -> Result<Vec<u8>> {
    let failed = |source| Error::Decompress { path: path.to_owned(), source: std::sync::Arc::new(source) };
    let mut decoder = GzDecoder::new(data);
    let mut out = Vec::with_capacity(data.len() * 3);
    decoder.read_to_end(&mut out).map_err(failed)?;
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

    proptest! {
        #[test]
        fn compress_then_decompress_is_the_identity(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            prop_assert_eq!(decompress("/p", &compress(&data)).unwrap(), data);
        }
    }
}
