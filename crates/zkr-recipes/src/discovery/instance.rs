//! [`ServiceInstance`] in Curator's JSON layout.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::DiscoveryError;

/// How an instance is registered (Curator's `ServiceType`): what node it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServiceType {
    /// An ephemeral node: gone when the registering process's session is.
    #[default]
    Dynamic,
    /// A persistent node, deleted when the discovery that registered it closes.
    Static,
    /// A persistent node that outlives the process: deleted only by `unregister`.
    Permanent,
    /// An ephemeral sequential node.
    DynamicSequential,
}

impl ServiceType {
    /// The name Curator writes (`DYNAMIC`, `STATIC`, `PERMANENT`, `DYNAMIC_SEQUENTIAL`).
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::Dynamic => "DYNAMIC",
            ServiceType::Static => "STATIC",
            ServiceType::Permanent => "PERMANENT",
            ServiceType::DynamicSequential => "DYNAMIC_SEQUENTIAL",
        }
    }
}

/// One part of a [`UriSpec`]: literal text, or a `{variable}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UriPart {
    /// The text, or the variable's name.
    pub value: String,
    /// Whether `value` names a variable.
    pub variable: bool,
}

/// A URI template such as `{scheme}://{address}:{port}` (Curator's `UriSpec`, serialized as
/// its parts).
///
/// # Examples
///
/// ```
/// use zkr_recipes::discovery::UriSpec;
///
/// let spec = UriSpec::parse("{scheme}://{address}:{port}/api");
/// assert_eq!(spec.parts().len(), 6);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UriSpec {
    parts: Vec<UriPart>,
}

impl UriSpec {
    /// Splits a template into literal parts and `{variable}` parts, as Curator does (an
    /// unclosed `{` is literal text).
    pub fn parse(template: &str) -> UriSpec {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let braces =
                rest.find('{').and_then(|open| rest[open..].find('}').map(|close| (open, open + close)));
            let Some((open, close)) = braces else {
                parts.push(UriPart { value: rest.to_owned(), variable: false });
                break;
            };
            if open > 0 {
                parts.push(UriPart { value: rest[..open].to_owned(), variable: false });
            }
            parts.push(UriPart { value: rest[open + 1..close].to_owned(), variable: true });
            rest = &rest[close + 1..];
        }
        UriSpec { parts }
    }

    /// The parts.
    pub fn parts(&self) -> &[UriPart] {
        &self.parts
    }

    /// The URI for `instance`: `scheme` (`https` when it has an SSL port), `name`, `id`,
    /// `address`, `port`, `ssl-port`, `registration-time-utc`, `service-type`, `[` and `]` (for
    /// literal braces) are known variables (Curator's `FIELD_*`); an unknown variable is left as
    /// `{name}`.
    pub fn build<P>(&self, instance: &ServiceInstance<P>) -> String {
        let number = |n: Option<u16>| n.map(|n| n.to_string()).unwrap_or_default();
        self.parts
            .iter()
            .map(|part| match (part.variable, part.value.as_str()) {
                (false, text) => text.to_owned(),
                (true, "scheme") => if instance.ssl_port.is_some() { "https" } else { "http" }.to_owned(),
                (true, "name") => instance.name.clone(),
                (true, "id") => instance.id.clone(),
                (true, "address") => instance.address.clone(),
                (true, "port") => number(instance.port),
                (true, "ssl-port") => number(instance.ssl_port),
                (true, "registration-time-utc") => instance.registration_time_utc.to_string(),
                (true, "service-type") => instance.service_type.as_str().to_owned(),
                (true, "[") => "{".to_owned(),
                (true, "]") => "}".to_owned(),
                (true, other) => format!("{{{other}}}"),
            })
            .collect()
    }
}

/// A registered instance of a service (Curator's `ServiceInstance<T>`), stored as JSON at
/// `<base path>/<name>/<id>` in Curator's layout, so Java and Rust services find each other.
///
/// The payload is any serde type; on the wire it is what Curator's Jackson writes for a
/// payload: an object with an `@class` property naming its Java class
/// ([`payload_class`](Self::payload_class), `java.util.LinkedHashMap` unless set), which a
/// Java reader with a `Map` payload class accepts.
///
/// # Examples
///
/// ```
/// use zkr_recipes::discovery::{ServiceInstance, UriSpec};
///
/// let instance = ServiceInstance::builder("orders", serde_json::json!({ "zone": "a" }))
///     .address("10.0.0.7")
///     .port(8080)
///     .uri_spec(UriSpec::parse("{scheme}://{address}:{port}"))
///     .build();
/// assert_eq!(instance.uri().as_deref(), Some("http://10.0.0.7:8080"));
/// let json = instance.to_json().unwrap();
/// let back: ServiceInstance<serde_json::Value> = ServiceInstance::from_json(&json).unwrap();
/// assert_eq!(back, instance);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceInstance<P> {
    /// The service's name.
    pub name: String,
    /// The instance's id, unique within the service.
    pub id: String,
    /// Host name or address.
    pub address: String,
    /// The port, if any.
    pub port: Option<u16>,
    /// The TLS port, if any.
    pub ssl_port: Option<u16>,
    /// Application data.
    pub payload: Option<P>,
    /// The Java class Curator's readers deserialize the payload as (borrowed when it is
    /// [`DEFAULT_PAYLOAD_CLASS`]: an instance read does not carry its own copy).
    pub payload_class: Cow<'static, str>,
    /// When it was registered, in milliseconds since the Unix epoch.
    pub registration_time_utc: i64,
    /// What node it gets.
    pub service_type: ServiceType,
    /// How to make its URI.
    pub uri_spec: Option<UriSpec>,
    /// Whether providers hand it out.
    pub enabled: bool,
}

/// The Java class written for an object payload unless another is set.
pub const DEFAULT_PAYLOAD_CLASS: &str = "java.util.LinkedHashMap";

/// The JSON as Curator reads and writes it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    name: String,
    id: String,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    ssl_port: Option<u16>,
    #[serde(default)]
    payload: Option<Value>,
    #[serde(rename = "registrationTimeUTC", default)]
    registration_time_utc: i64,
    #[serde(default)]
    service_type: ServiceType,
    #[serde(default)]
    uri_spec: Option<UriSpec>,
    #[serde(default = "enabled_default")]
    enabled: bool,
}

fn enabled_default() -> bool {
    true
}

impl<P> ServiceInstance<P> {
    /// A builder for an instance of `name` with `payload` (use `()` for none), a random id,
    /// registered now.
    pub fn builder(name: &str, payload: P) -> ServiceInstanceBuilder<P> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        ServiceInstanceBuilder {
            instance: ServiceInstance {
                name: name.to_owned(),
                id: uuid::Uuid::new_v4().to_string(),
                address: String::new(),
                port: None,
                ssl_port: None,
                payload: Some(payload),
                payload_class: Cow::Borrowed(DEFAULT_PAYLOAD_CLASS),
                registration_time_utc: i64::try_from(now.as_millis()).unwrap_or(i64::MAX),
                service_type: ServiceType::Dynamic,
                uri_spec: None,
                enabled: true,
            },
        }
    }

    /// The URI from the [`UriSpec`], if there is one.
    pub fn uri(&self) -> Option<String> {
        self.uri_spec.as_ref().map(|spec| spec.build(self))
    }
}

impl<P: Serialize> ServiceInstance<P> {
    /// Curator's JSON for the instance.
    ///
    /// # Errors
    /// [`DiscoveryError::Payload`] when the payload does not serialize.
    pub fn to_json(&self) -> Result<Vec<u8>, DiscoveryError> {
        let payload = match &self.payload {
            None => None,
            Some(payload) => Some(to_java(serde_json::to_value(payload)?, &self.payload_class)),
        };
        let wire = Wire {
            name: self.name.clone(),
            id: self.id.clone(),
            address: Some(self.address.clone()),
            port: self.port,
            ssl_port: self.ssl_port,
            payload,
            registration_time_utc: self.registration_time_utc,
            service_type: self.service_type,
            uri_spec: self.uri_spec.clone(),
            enabled: self.enabled,
        };
        Ok(serde_json::to_vec(&wire)?)
    }
}

impl<P: DeserializeOwned> ServiceInstance<P> {
    /// Reads Curator's JSON (unknown fields are ignored, a missing `enabled` is `true`).
    ///
    /// # Errors
    /// [`DiscoveryError::Payload`] when the JSON or its payload does not parse.
    pub fn from_json(json: &[u8]) -> Result<Self, DiscoveryError> {
        let wire: Wire = serde_json::from_slice(json)?;
        let (payload, payload_class) = match wire.payload {
            None | Some(Value::Null) => (None, Cow::Borrowed(DEFAULT_PAYLOAD_CLASS)),
            Some(value) => {
                let (value, class) = from_java(value);
                (Some(serde_json::from_value(value)?), class)
            }
        };
        Ok(ServiceInstance {
            name: wire.name,
            id: wire.id,
            address: wire.address.unwrap_or_default(),
            port: wire.port,
            ssl_port: wire.ssl_port,
            payload,
            payload_class,
            registration_time_utc: wire.registration_time_utc,
            service_type: wire.service_type,
            uri_spec: wire.uri_spec,
            enabled: wire.enabled,
        })
    }
}

/// Jackson's `@JsonTypeInfo(use = CLASS)` form: an object gets an `@class` property; anything
/// else is wrapped as `[class, value]`.
fn to_java(value: Value, class: &str) -> Value {
    match value {
        Value::Object(mut map) => {
            map.insert("@class".to_owned(), Value::String(class.to_owned()));
            Value::Object(map)
        }
        Value::String(_) => Value::Array(vec!["java.lang.String".into(), value]),
        Value::Bool(_) => Value::Array(vec!["java.lang.Boolean".into(), value]),
        Value::Number(ref n) if n.is_f64() => Value::Array(vec!["java.lang.Double".into(), value]),
        Value::Number(_) => Value::Array(vec!["java.lang.Long".into(), value]),
        other => other,
    }
}

/// The payload and its Java class from Jackson's form.
fn from_java(value: Value) -> (Value, Cow<'static, str>) {
    let class = |class: String| match class.as_str() {
        DEFAULT_PAYLOAD_CLASS => Cow::Borrowed(DEFAULT_PAYLOAD_CLASS),
        _ => Cow::Owned(class),
    };
    match value {
        Value::Object(mut map) => {
            let class = match map.remove("@class") {
                Some(Value::String(name)) => class(name),
                _ => Cow::Borrowed(DEFAULT_PAYLOAD_CLASS),
            };
            (Value::Object(map), class)
        }
        Value::Array(mut pair) if pair.len() == 2 && pair[0].is_string() => {
            let value = pair.pop().unwrap_or(Value::Null);
            let name = pair.pop().and_then(|c| c.as_str().map(str::to_owned)).unwrap_or_default();
            (value, class(name))
        }
        other => (other, Cow::Borrowed(DEFAULT_PAYLOAD_CLASS)),
    }
}

/// Builds a [`ServiceInstance`]: [`ServiceInstance::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ServiceInstanceBuilder<P> {
    instance: ServiceInstance<P>,
}

impl<P> ServiceInstanceBuilder<P> {
    /// The id (default: a random UUID).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.instance.id = id.into();
        self
    }

    /// The address (default: empty).
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.instance.address = address.into();
        self
    }

    /// The port.
    pub fn port(mut self, port: u16) -> Self {
        self.instance.port = Some(port);
        self
    }

    /// The TLS port.
    pub fn ssl_port(mut self, port: u16) -> Self {
        self.instance.ssl_port = Some(port);
        self
    }

    /// The Java class of the payload for Curator readers (default `java.util.LinkedHashMap`;
    /// Spring Cloud Zookeeper's is `org.springframework.cloud.zookeeper.discovery.ZookeeperInstance`).
    pub fn payload_class(mut self, class: impl Into<Cow<'static, str>>) -> Self {
        self.instance.payload_class = class.into();
        self
    }

    /// The service type (default [`ServiceType::Dynamic`]).
    pub fn service_type(mut self, service_type: ServiceType) -> Self {
        self.instance.service_type = service_type;
        self
    }

    /// The URI template.
    pub fn uri_spec(mut self, spec: UriSpec) -> Self {
        self.instance.uri_spec = Some(spec);
        self
    }

    /// Whether providers hand it out (default `true`).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.instance.enabled = enabled;
        self
    }

    /// The instance.
    pub fn build(self) -> ServiceInstance<P> {
        self.instance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_spec_splits_into_literals_and_variables() {
        let spec = UriSpec::parse("{scheme}://{address}:{port}/x");
        let parts: Vec<_> = spec.parts().iter().map(|p| (p.value.as_str(), p.variable)).collect();
        assert_eq!(
            parts,
            [
                ("scheme", true),
                ("://", false),
                ("address", true),
                (":", false),
                ("port", true),
                ("/x", false)
            ]
        );
        assert_eq!(UriSpec::parse("a{b").parts(), [UriPart { value: "a{b".into(), variable: false }]);
        assert!(UriSpec::parse("").parts().is_empty());
        let instance = ServiceInstance::builder("s", ()).id("i").address("h").port(1).ssl_port(2).build();
        let uri = UriSpec::parse("{scheme}://{address}:{ssl-port}/{[}{name}{]}/{service-type}/{what}")
            .build(&instance);
        assert_eq!(uri, "https://h:2/{s}/DYNAMIC/{what}");
    }

    #[test]
    fn curator_json_is_read_with_its_payload_class_and_written_back_alike() {
        let json = br#"{"name":"orders","id":"i-1","address":"10.0.0.1","port":8080,"sslPort":null,
            "payload":{"@class":"java.util.LinkedHashMap","zone":"a"},"registrationTimeUTC":1700000000000,
            "serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true}]},"enabled":true,
            "unknownField":1}"#;
        let instance: ServiceInstance<serde_json::Value> = ServiceInstance::from_json(json).unwrap();
        assert_eq!(instance.payload, Some(serde_json::json!({ "zone": "a" })));
        assert_eq!(instance.port, Some(8080));
        assert_eq!(instance.registration_time_utc, 1_700_000_000_000);
        let written: Value = serde_json::from_slice(&instance.to_json().unwrap()).unwrap();
        assert_eq!(written["payload"]["@class"], "java.util.LinkedHashMap");
        assert_eq!(written["registrationTimeUTC"], 1_700_000_000_000_i64);
        assert_eq!(written["serviceType"], "DYNAMIC");
        assert_eq!(written["sslPort"], Value::Null);
    }

    #[test]
    fn a_scalar_payload_uses_jacksons_wrapper_array() {
        let instance = ServiceInstance::builder("s", "hello".to_owned()).id("x").build();
        let written: Value = serde_json::from_slice(&instance.to_json().unwrap()).unwrap();
        assert_eq!(written["payload"], serde_json::json!(["java.lang.String", "hello"]));
        let back: ServiceInstance<String> = ServiceInstance::from_json(&instance.to_json().unwrap()).unwrap();
        assert_eq!(back.payload.as_deref(), Some("hello"));
    }

    #[test]
    fn a_missing_enabled_is_true_and_bad_json_is_an_error() {
        let old = br#"{"name":"s","id":"x","address":"h","port":1,"serviceType":"STATIC"}"#;
        let instance: ServiceInstance<Value> = ServiceInstance::from_json(old).unwrap();
        assert!(instance.enabled);
        assert_eq!(instance.service_type, ServiceType::Static);
        assert!(ServiceInstance::<Value>::from_json(b"{").is_err());
    }
}
