//! The monitoring kit in docs/monitoring/ against zkr's own metrics: the alert rules pass
//! `promtool check rules` and their unit tests (`promtool test rules`), every query of the
//! Grafana dashboard is valid PromQL (checked by promtool as recording rules), and every
//! metric the rules and the dashboard name is one zkr describes, while every metric zkr
//! describes is on the dashboard. No server needed; promtool comes from Debian's `prometheus`
//! package (scripts/ensure-deps.sh).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn monitoring(file: &str) -> PathBuf {
    root().join("docs/monitoring").join(file)
}

/// Runs promtool with `args`, failing with its output unless it succeeds.
fn promtool(args: &[&str], dir: &Path) {
    let out = Command::new("promtool").args(args).current_dir(dir).output().unwrap_or_else(|e| {
        panic!("promtool: {e} (install Debian's prometheus package: scripts/ensure-deps.sh)")
    });
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
}

/// The `zkr_*` metric names in `text` (a histogram's `_bucket`, `_sum`, `_count` series
/// named by their histogram).
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("zkr_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        let name = &tail[..end];
        let base = ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name);
        names.insert(base.to_owned());
        rest = &tail[end..];
    }
    names
}

/// The metrics zkr describes (`describe_metrics()`, the one home of every HELP text).
fn described() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in ["crates/zkr-connection/src/session/telemetry.rs", "crates/zkr-recipes/src/telemetry.rs"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for part in text.split("describe_").skip(1) {
            let call = ["counter!(", "gauge!(", "histogram!("].iter().find_map(|m| part.strip_prefix(m));
            if let Some(call) = call {
                names.extend(metric_names(call.split(',').next().unwrap()));
            }
        }
    }
    names
}

/// Every target expression of the dashboard.
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string(monitoring("grafana-zkr.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let queries: Vec<String> = panels
        .iter()
        .filter_map(|p| p["targets"].as_array())
        .flatten()
        .map(|t| t["expr"].as_str().expect("a target's expr").to_owned())
        .collect();
    assert!(queries.len() >= 20, "{} queries", queries.len());
    queries
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    let dir = monitoring("");
    promtool(&["check", "rules", "zkr-alerts.yml"], &dir);
    promtool(&["test", "rules", "zkr-alerts.test.yml"], &dir);
}

#[test]
fn every_dashboard_query_is_valid_promql() {
    // Grafana's variables as a Prometheus server would see them after substitution.
    let rules: String = dashboard_queries()
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let q = q.replace("$__rate_interval", "5m").replace("$job", ".*").replace("$client", ".*");
            format!(
                "      - record: dashboard_query_{i}\n        expr: {}\n",
                serde_json::to_string(&q).unwrap()
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("queries.yml"),
        format!("groups:\n  - name: dashboard\n    rules:\n{rules}"),
    )
    .unwrap();
    promtool(&["check", "rules", "queries.yml"], dir.path());
}

#[test]
fn the_rules_and_the_dashboard_name_zkrs_metrics_and_the_dashboard_shows_them_all() {
    let described = described();
    assert!(described.len() >= 20, "{described:?}");
    let rules = metric_names(&std::fs::read_to_string(monitoring("zkr-alerts.yml")).unwrap());
    let shown = metric_names(&dashboard_queries().join("\n"));
    for name in rules.iter().chain(&shown) {
        assert!(described.contains(name), "{name} is not a metric zkr describes");
    }
    let missing: Vec<_> = described.difference(&shown).collect();
    assert!(missing.is_empty(), "not on the dashboard: {missing:?}");
}
