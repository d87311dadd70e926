//! How config values are printed: JSON lines for machines, the bare value for people and
//! scripts.

use std::io::{IsTerminal as _, Write as _};

use base64::Engine as _;
use serde_json::Value;
use zkr_recipes::config::Versioned;

/// A value as JSON: `("json", document)` for a JSON object or array, `("text", string)` for
/// other UTF-8 (so `10` stays the text "10"), `("base64", string)` for binary data.
pub(crate) fn encode_value(data: &[u8]) -> (&'static str, Value) {
    match std::str::from_utf8(data) {
        Ok(text) => match serde_json::from_str::<Value>(text) {
            Ok(document @ (Value::Object(_) | Value::Array(_))) => ("json", document),
            _ => ("text", Value::String(text.to_owned())),
        },
        Err(_) => ("base64", Value::String(base64::engine::general_purpose::STANDARD.encode(data))),
    }
}

/// One JSON line: path, version, mzxid, encoding and value (all null for a missing node).
pub(crate) fn json_line(path: &str, value: Option<&Versioned<Vec<u8>>>) -> String {
    let line = match value {
        Some(v) => {
            let (encoding, value) = encode_value(&v.value);
            serde_json::json!({
                "path": path,
                "version": v.version,
                "mzxid": v.mzxid,
                "encoding": encoding,
                "value": value,
            })
        }
        None => serde_json::json!({
            "path": path, "version": null, "mzxid": null, "encoding": null, "value": null,
        }),
    };
    line.to_string()
}

/// Prints `line` and a newline, flushed at once (a reader may be waiting for it).
pub(crate) fn print_line(line: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// Writes a value as `config get` does. To a pipe or file: the bytes exactly as stored. To a
/// terminal: text ends with a newline, and binary data is described instead of written,
/// unless `raw`.
pub(crate) fn write_value(path: &str, data: &[u8], raw: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let terminal = out.is_terminal();
    if terminal && !raw && std::str::from_utf8(data).is_err() {
        writeln!(
            out,
            "({path} holds {} bytes of binary data; --raw writes them, --json shows them in base64)",
            data.len()
        )?;
    } else {
        out.write_all(data)?;
        if terminal && !raw && !data.ends_with(b"\n") {
            out.write_all(b"\n")?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_embedded_and_scalars_stay_text() {
        assert_eq!(encode_value(br#"{"a":[1,2]}"#), ("json", serde_json::json!({"a": [1, 2]})));
        assert_eq!(encode_value(b"[1]"), ("json", serde_json::json!([1])));
        assert_eq!(encode_value(b"10"), ("text", serde_json::json!("10")));
        assert_eq!(encode_value(b"{not json"), ("text", serde_json::json!("{not json")));
        assert_eq!(encode_value(&[0xff, 0x00]), ("base64", serde_json::json!("/wA=")));
    }
}
