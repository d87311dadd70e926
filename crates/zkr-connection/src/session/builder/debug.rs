//! How a client prints. A builder shows every field of [`Config`] by name, the credentials
//! among them as `<redacted>`. A [`ZkClient`] shows what a log line needs (its name, connect
//! string, namespace, session and state) and no settings at all, a [`Session`] and its
//! [`SessionClient`] their id and state; so a recipe that holds a
//! client (`tracing::debug!(?lock)`) prints a short line and no password.

use std::fmt;

use super::Config;
use crate::session::client::Session;
use crate::session::client::ZkClient;
use crate::session::session_client::SessionClient;

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &format_args!("{:#x}", self.id()))
            .field("generation", &self.generation())
            .field("connection", &self.connection())
            .finish()
    }
}

impl fmt::Debug for SessionClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionClient")
            .field("session", &format_args!("{:#x}", self.raw().session_id().0))
            .field("state", &self.raw().state())
            .finish()
    }
}

impl fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let session = self.try_session().map(|s| format!("{:#x}", s.id()));
        f.debug_struct("ZkClient")
            .field("name", &self.name())
            .field("connect_string", &self.connect_string())
            .field("namespace", &self.namespace())
            .field("session", &session)
            .field("state", &self.state())
            .finish()
    }
}

/// What a credential prints as.
struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Taken apart whole: a field added to `Config` does not compile until it is decided
        // here whether it shows.
        let Config {
            connect_string,
            session_timeout,
            connection_timeout,
            retry_policy,
            namespace,
            compression,
            max_decompressed_len,
            auth,
            acl_provider,
            can_be_read_only,
            error_policy,
            stall_nudge,
            ensemble_tracker,
            name,
            metrics_path_labels,
            #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
            sasl,
            #[cfg(feature = "sasl-gssapi")]
            gssapi,
            #[cfg(feature = "tls")]
            tls,
            #[cfg(feature = "tls")]
            tls_ca_pem,
            #[cfg(feature = "tls")]
            tls_identity_pem,
        } = self;
        // The schemes show; their bytes (`user:password` for `digest`) do not.
        let auth: Vec<(&str, Redacted)> =
            auth.iter().map(|(scheme, _)| (scheme.as_str(), Redacted)).collect();
        let mut out = f.debug_struct("Config");
        out.field("connect_string", connect_string)
            .field("session_timeout", session_timeout)
            .field("connection_timeout", connection_timeout)
            .field("retry_policy", retry_policy)
            .field("namespace", namespace)
            .field("compression", compression)
            .field("max_decompressed_len", max_decompressed_len)
            .field("auth", &auth)
            .field("acl_provider", acl_provider)
            .field("can_be_read_only", can_be_read_only)
            .field("error_policy", error_policy)
            .field("stall_nudge", stall_nudge)
            .field("ensemble_tracker", ensemble_tracker)
            .field("name", name)
            .field("metrics_path_labels", metrics_path_labels);
        // zookeeper-client's options print their password (DIGEST-MD5).
        #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
        out.field("sasl", &sasl.as_ref().map(|_| Redacted));
        #[cfg(feature = "sasl-gssapi")]
        out.field("gssapi", gssapi);
        // zookeeper-client's options may hold a client key; what they print is theirs to decide.
        #[cfg(feature = "tls")]
        out.field("tls", &tls.as_ref().map(|_| Redacted))
            .field("tls_ca_pem", tls_ca_pem)
            .field("tls_identity_pem", &tls_identity_pem.as_ref().map(|(cert, _key)| (cert, Redacted)));
        out.finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::session::client::ZkClient;

    /// A client prints one short line: no settings, no credentials, no internals.
    #[tokio::test]
    async fn a_client_prints_what_a_log_line_needs() {
        let zk = ZkClient::builder("127.0.0.1:1/app")
            .digest_auth("carol", "digest-secret")
            .namespace("billing")
            .start()
            .await
            .unwrap();
        let printed = format!("{zk:?}");
        assert!(
            printed.starts_with("ZkClient { name: \"") && printed.contains("\"127.0.0.1:1/app\""),
            "{printed}"
        );
        assert!(
            printed.contains("namespace: Some(\"billing\")") && printed.contains("session: None"),
            "{printed}"
        );
        assert!(
            !printed.contains("digest-secret") && !printed.contains("carol") && printed.len() < 200,
            "{printed}"
        );
    }

    /// Every credential the builder takes, and none prints; the rest does.
    #[test]
    fn credentials_print_redacted_and_the_rest_as_set() {
        let builder = ZkClient::builder("127.0.0.1:2181/app")
            .digest_auth("carol", "digest-secret")
            .auth("ip", b"raw-secret".to_vec())
            .namespace("billing");
        #[cfg(feature = "sasl-digest-md5")]
        let builder = builder.sasl_digest_md5("alice", "sasl-secret");
        #[cfg(feature = "tls")]
        let builder = builder.tls_trusting("ca-pem").tls_identity("cert-pem", "key-pem-secret");
        for printed in [format!("{builder:?}"), format!("{builder:#?}")] {
            for secret in ["digest-secret", "carol:", "raw-secret", "sasl-secret", "key-pem-secret"] {
                assert!(!printed.contains(secret), "{secret} in {printed}");
            }
            let bytes = format!("{:?}", b"carol".to_vec());
            assert!(!printed.contains(bytes.trim_matches(['[', ']'])), "{printed}");
            for shown in ["127.0.0.1:2181/app", "billing", "\"digest\"", "\"ip\"", "<redacted>"] {
                assert!(printed.contains(shown), "{shown} not in {printed}");
            }
            #[cfg(feature = "tls")]
            assert!(printed.contains("cert-pem") && printed.contains("ca-pem"), "{printed}");
        }
    }
}
