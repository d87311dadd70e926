//! ZooKeeper's four-letter-word admin commands over plain TCP.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, Result};

/// Sends a four-letter command (`srvr`, `mntr`, `cons`, ...) to the server at `addr` and returns
/// its reply.
///
/// # Errors
/// [`Error::Io`] when the server cannot be reached or the reply does not arrive within 5 s.
///
/// # Cancel safety
/// Cancel safe: the command is read-only on the server.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let reply = zkr_testing::four_letter_word("127.0.0.1:2181", "srvr").await?;
/// assert!(reply.contains("Mode:"));
/// # Ok(()) }
/// ```
pub async fn four_letter_word(addr: &str, command: &str) -> Result<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(command.as_bytes()).await?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await?;
        Ok::<_, std::io::Error>(reply)
    };
    match tokio::time::timeout(Duration::from_secs(5), exchange).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(Error::io(format!("sending `{command}` to {addr}"), e)),
        Err(_) => Err(Error::io(
            format!("sending `{command}` to {addr}"),
            std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply within 5 s"),
        )),
    }
}

/// Parses the `Mode:` line of a `srvr` reply (`standalone`, `leader`, `follower`, `observer`).
pub(crate) fn parse_mode(reply: &str) -> Option<&str> {
    reply.lines().find_map(|line| line.strip_prefix("Mode:")).map(str::trim)
}

/// Parses `mntr` output into (key, value) pairs.
///
/// # Examples
///
/// ```
/// let pairs = zkr_testing::parse_mntr("zk_version\t3.8.0\nzk_packets_received\t42\n");
/// assert_eq!(pairs[1], ("zk_packets_received".to_string(), "42".to_string()));
/// ```
pub fn parse_mntr(reply: &str) -> Vec<(String, String)> {
    reply
        .lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('\t')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_is_parsed() {
        let reply = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(parse_mode(reply), Some("follower"));
        assert_eq!(parse_mode("garbage"), None);
    }
}
