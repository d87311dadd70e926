//! Why a Kerberos (SASL GSSAPI) connection failed. `zookeeper-client` logs the GSSAPI error
//! and reports only "no available hosts", so when no session comes, zkr repeats the client's
//! first step itself: the process's Kerberos credentials, then a service ticket for the
//! servers' principal, and reports the GSSAPI library's reason.

use libgssapi::context::{ClientCtx, CtxFlags};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};

/// The servers' principal, `<service>/<host>@REALM`, as the client names it.
#[derive(Debug, Clone)]
pub(crate) struct GssapiTarget {
    /// The service part (`zookeeper`).
    pub(crate) service: String,
    /// The host part; `None`: each server's host as the connect string names it.
    pub(crate) host: Option<String>,
}

impl GssapiTarget {
    /// `zookeeper-client`'s options for this target.
    pub(crate) fn options(&self) -> zookeeper_client::SaslOptions {
        let options = zookeeper_client::SaslOptions::gssapi().with_username(self.service.clone());
        match &self.host {
            Some(host) => options.with_hostname(host.clone()).into(),
            None => options.into(),
        }
    }
}

/// Why a GSSAPI login to the first host of `connect_string` cannot start, if it cannot.
pub(crate) async fn diagnose(connect_string: &str, target: &GssapiTarget) -> Option<String> {
    let first = crate::session::connect_string::hosts(connect_string).into_iter().next()?;
    let host = match &target.host {
        Some(host) => host.clone(),
        None => first
            .rsplit_once(':')
            .map_or(first.as_str(), |(host, _)| host)
            .trim_matches(['[', ']'])
            .to_owned(),
    };
    let service = target.service.clone();
    tokio::task::spawn_blocking(move || first_step(&service, &host).err()).await.ok().flatten()
}

/// Credentials, then a service ticket for `service/host` (blocking: it may ask the KDC).
fn first_step(service: &str, host: &str) -> Result<(), String> {
    let mut mechs = OidSet::new().map_err(|e| format!("GSSAPI: {e}"))?;
    mechs.add(&GSS_MECH_KRB5).map_err(|e| format!("GSSAPI: {e}"))?;
    let cred = Cred::acquire(None, None, CredUsage::Initiate, Some(&mechs))
        .map_err(|e| format!("no Kerberos credentials (kinit, or KRB5CCNAME): {e}"))?;
    let name = Name::new(format!("{service}@{host}").as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE))
        .map_err(|e| format!("the servers' principal {service}/{host}: {e}"))?;
    let mut context = ClientCtx::new(Some(cred), name, CtxFlags::GSS_C_MUTUAL_FLAG, Some(&GSS_MECH_KRB5));
    context.step(None, None).map_err(|e| format!("no Kerberos ticket for {service}/{host}: {e}"))?;
    Ok(())
}
