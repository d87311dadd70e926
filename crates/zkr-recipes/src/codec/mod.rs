//! How values are turned into bytes and back, for every family: [`Codec`] and its formats
//! (config values, cache nodes, queue items), and the fixed-width numbers of the counters and
//! ID generators (`number`).

pub(crate) mod number;

use std::fmt::Debug;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why a value did not encode or decode: the format, with the format library's error as the
/// cause.
///
/// # Examples
///
/// ```
/// use zkr_recipes::codec::{Codec, CodecError, Json};
///
/// let error: CodecError = <Json as Codec<u32>>::decode(&Json, b"{oops").unwrap_err();
/// assert_eq!(error.format(), "JSON");
/// assert_eq!(error.to_string(), "not valid JSON");
/// assert!(std::error::Error::source(&error).is_some(), "serde_json's own error");
/// // A codec of your own says what it found wrong:
/// let mine = CodecError::new("protobuf", "a required field is missing");
/// assert_eq!(mine.to_string(), "not valid protobuf");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("not valid {format}")]
pub struct CodecError {
    format: &'static str,
    #[source]
    source: Arc<dyn std::error::Error + Send + Sync>,
}

impl CodecError {
    /// An error of `format` (`"JSON"`, `"protobuf"`) caused by `cause`: another error, or a
    /// message (`&str`, `String`).
    pub fn new(format: &'static str, cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CodecError { format, source: Arc::from(cause.into()) }
    }

    /// The format that was expected.
    pub fn format(&self) -> &'static str {
        self.format
    }
}

/// Decodes (and encodes, for publishing) the values of config nodes. Implement it for a
/// format of your own; [`Json`], [`Toml`], [`Yaml`], [`Utf8`] and [`Raw`] are provided.
///
/// A value that fails to decode never replaces the last good one: the watcher reports a
/// [`ConfigEvent::DecodeFailed`](crate::config::ConfigEvent::DecodeFailed) and keeps what it had.
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Json};
///
/// #[derive(serde::Deserialize, serde::Serialize, Debug, PartialEq)]
/// struct Db { url: String, pool: u32 }
///
/// let db: Db = Json.decode(br#"{"url":"postgres://db","pool":8}"#).unwrap();
/// assert_eq!(db.pool, 8);
/// assert!(<Json as Codec<Db>>::decode(&Json, b"{oops").is_err());
/// ```
pub trait Codec<T>: Send + Sync + Debug + 'static {
    /// The value in `data`, or why it is not one.
    ///
    /// # Errors
    /// A [`CodecError`] naming the format, with the format library's error as its cause.
    fn decode(&self, data: &[u8]) -> Result<T, CodecError>;

    /// The bytes that [`decode`](Self::decode) turns back into `value`.
    ///
    /// # Errors
    /// A [`CodecError`] naming the format, with why the value cannot be encoded.
    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError>;
}

/// JSON through `serde_json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<T: Serialize + DeserializeOwned + 'static> Codec<T> for Json {
    fn decode(&self, data: &[u8]) -> Result<T, CodecError> {
        serde_json::from_slice(data).map_err(|e| CodecError::new("JSON", e))
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        serde_json::to_vec(value).map_err(|e| CodecError::new("JSON", e))
    }
}

/// TOML through the `toml` crate (feature `toml`).
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Toml};
/// let v: std::collections::BTreeMap<String, u32> = Toml.decode(b"pool = 8").unwrap();
/// assert_eq!(v["pool"], 8);
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[cfg(feature = "toml")]
#[cfg_attr(docsrs, doc(cfg(feature = "toml")))]
pub struct Toml;

#[cfg(feature = "toml")]
impl<T: Serialize + DeserializeOwned + 'static> Codec<T> for Toml {
    fn decode(&self, data: &[u8]) -> Result<T, CodecError> {
        let text = std::str::from_utf8(data).map_err(|e| CodecError::new("TOML", e))?;
        toml::from_str(text).map_err(|e| CodecError::new("TOML", e))
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        toml::to_string(value).map(String::into_bytes).map_err(|e| CodecError::new("TOML", e))
    }
}

/// YAML through `serde_yaml_ng` (feature `yaml`).
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Yaml};
/// let v: Vec<u32> = Yaml.decode(b"- 1\n- 2\n").unwrap();
/// assert_eq!(v, [1, 2]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[cfg(feature = "yaml")]
#[cfg_attr(docsrs, doc(cfg(feature = "yaml")))]
pub struct Yaml;

#[cfg(feature = "yaml")]
impl<T: Serialize + DeserializeOwned + 'static> Codec<T> for Yaml {
    fn decode(&self, data: &[u8]) -> Result<T, CodecError> {
        serde_yaml_ng::from_slice(data).map_err(|e| CodecError::new("YAML", e))
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        serde_yaml_ng::to_string(value).map(String::into_bytes).map_err(|e| CodecError::new("YAML", e))
    }
}

/// UTF-8 text, as is.
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Utf8};
/// assert_eq!(Utf8.decode(b"jdbc:mysql://db").unwrap(), "jdbc:mysql://db");
/// assert!(Utf8.decode(&[0xff]).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Utf8;

impl Codec<String> for Utf8 {
    fn decode(&self, data: &[u8]) -> Result<String, CodecError> {
        String::from_utf8(data.to_vec()).map_err(|e| CodecError::new("UTF-8", e))
    }

    fn encode(&self, value: &String) -> Result<Vec<u8>, CodecError> {
        Ok(value.clone().into_bytes())
    }
}

/// Bytes, as they are; never fails.
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Raw};
/// assert_eq!(Raw.decode(&[0, 1]).unwrap(), vec![0, 1]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Raw;

impl Codec<Vec<u8>> for Raw {
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(data.to_vec())
    }

    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>, CodecError> {
        Ok(value.clone())
    }
}

/// Another codec's bytes gzip-compressed as Curator's `GzipCompressionProvider` stores them
/// (Curator's `compressed()` writes and `decompressed()` reads): for config values and cached
/// nodes that Curator processes with compression on share. `Gzip(Json)` is JSON,
/// compressed. A value that inflates to more than
/// [`DEFAULT_MAX_DECOMPRESSED_LEN`](zkr_connection::compression::DEFAULT_MAX_DECOMPRESSED_LEN)
/// (16 MiB) is refused (a `CodecError` whose source is
/// [`Error::DecompressedTooLarge`](zkr_connection::Error::DecompressedTooLarge)) without being
/// inflated.
///
/// # Examples
///
/// ```
/// use zkr_recipes::config::{Codec, Gzip, Utf8};
/// let codec = Gzip(Utf8);
/// let stored = codec.encode(&"value ".repeat(20)).unwrap();
/// assert_eq!(&stored[..2], &[0x1f, 0x8b]);
/// assert_eq!(codec.decode(&stored).unwrap(), "value ".repeat(20));
/// assert!(codec.decode(b"not gzip").is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Gzip<C>(pub C);

impl<T, C: Codec<T>> Codec<T> for Gzip<C> {
    fn decode(&self, data: &[u8]) -> Result<T, CodecError> {
        let plain = zkr_connection::compression::decompress("", data).map_err(|e| match e {
            zkr_connection::Error::Decompress { source, .. } => CodecError::new("gzip", source),
            other => CodecError::new("gzip", other),
        })?;
        self.0.decode(&plain)
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        Ok(zkr_connection::compression::compress(&self.0.encode(value)?))
    }
}

impl zkr_connection::Classify for CodecError {
    /// Always [`ErrorKind::Corrupt`](zkr_connection::ErrorKind::Corrupt): the bytes are not a value of the codec's format.
    fn kind(&self) -> zkr_connection::ErrorKind {
        zkr_connection::ErrorKind::Corrupt
    }

    /// Never: a codec writes nothing.
    fn is_ambiguous(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// Found by `cargo fuzz run config_decode`: a number too long for an integer came back from
    /// a JSON round trip as a different float (serde_json's fast float parsing; we now enable its
    /// `float_roundtrip`).
    #[test]
    fn long_numbers_round_trip_exactly() {
        let data = b"111111111111111111111111";
        let value: serde_json::Value = Json.decode(data).unwrap();
        assert_eq!(Json.decode(&Json.encode(&value).unwrap()).ok(), Some(value));
        // YAML reads it as an integer too large for the value: an error, not a panic.
        #[cfg(feature = "yaml")]
        assert!(Codec::<serde_json::Value>::decode(&Yaml, data).is_err());
    }

    proptest! {
        /// Bytes planted by anyone: every codec answers, none panics.
        #[test]
        fn no_bytes_make_a_codec_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = Codec::<serde_json::Value>::decode(&Json, &data);
            #[cfg(feature = "toml")]
            let _ = Codec::<serde_json::Value>::decode(&Toml, &data);
            #[cfg(feature = "yaml")]
            let _ = Codec::<serde_json::Value>::decode(&Yaml, &data);
            let _ = Codec::<BTreeMap<String, u64>>::decode(&Json, &data);
            match Utf8.decode(&data) {
                Ok(s) => prop_assert_eq!(s.into_bytes(), data),
                Err(_) => prop_assert!(std::str::from_utf8(&data).is_err()),
            }
        }

        /// Text close to each format (its own punctuation, any characters): still no panic.
        #[test]
        fn near_misses_make_no_codec_panic(text in "[\\[\\]{}\":,=#'\\-\\n a-z0-9\\PC]{0,200}") {
            let _ = Codec::<serde_json::Value>::decode(&Json, text.as_bytes());
            #[cfg(feature = "toml")]
            let _ = Codec::<serde_json::Value>::decode(&Toml, text.as_bytes());
            #[cfg(feature = "yaml")]
            let _ = Codec::<serde_json::Value>::decode(&Yaml, text.as_bytes());
        }

        /// What we encode, we decode back, in every structured format.
        #[test]
        fn structured_values_round_trip(map in prop::collection::btree_map("\\PC{1,12}", any::<i64>(), 0..8)) {
            let codecs: Vec<&dyn Codec<BTreeMap<String, i64>>> = vec![
                &Json,
                #[cfg(feature = "toml")]
                &Toml,
                #[cfg(feature = "yaml")]
                &Yaml,
            ];
            for codec in codecs {
                let bytes = codec.encode(&map).unwrap();
                prop_assert_eq!(codec.decode(&bytes).unwrap(), map.clone(), "{:?}", codec);
            }
        }
    }
}
