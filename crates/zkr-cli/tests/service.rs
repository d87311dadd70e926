//! `zkr service register/list` and `zkr members`: an instance registered while a command runs
//! (listed from inside it, gone after, the command's status passed on), Curator's JSON with
//! `--json`, SIGTERM without a command, and bad arguments.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_testing::shared_server;

mod common;
use common::{exit_status, run_zkr, send_signal, unique, wait_for_children, zkr};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_is_registered_while_the_command_runs_and_its_status_is_zkrs() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique("service");
    let zkr_bin = env!("CARGO_BIN_EXE_zkr");
    let script = format!(
        "echo \"$ZKR_SERVICE_ID $ZKR_SERVICE_NODE\"; {zkr_bin} service list api --base {base}; \
         {zkr_bin} service list api --base {base} --json; exit 3"
    );
    let args = [
        "service",
        "register",
        "api",
        "--base",
        &base,
        "--address",
        "10.0.0.7",
        "--port",
        "8080",
        "--id",
        "i-1",
        "--payload",
        r#"{"zone":"a"}"#,
        "--uri-spec",
        "{scheme}://{address}:{port}",
        "--",
        "sh",
        "-c",
        &script,
    ];
    let output = run_zkr(&cs, &args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], format!("i-1 {base}/api/i-1"));
    assert_eq!(lines[1], "i-1\t10.0.0.7\t8080\t-\tenabled\thttp://10.0.0.7:8080");
    let json: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(json["payload"]["zone"], "a");
    assert_eq!(json["serviceType"], "DYNAMIC");
    let after = run_zkr(&cs, &["service", "list", "api", "--base", &base]).await;
    assert!(after.status.success());
    assert!(after.stdout.is_empty(), "gone after the command: {:?}", String::from_utf8_lossy(&after.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_command_it_stays_registered_until_sigterm_and_members_lists_it() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let base = unique("service-hold");
    let args =
        ["service", "register", "api", "--base", &base, "--address", "h", "--port", "1", "--id", "m-1"];
    let mut child = zkr(&cs).args(args).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = stderr.next_line().await.unwrap().unwrap();
    assert_eq!(line, format!("zkr: registered api as {base}/api/m-1"));
    let members = run_zkr(&cs, &["members", &format!("{base}/api"), "--json"]).await;
    let member: Value = serde_json::from_slice(&members.stdout).unwrap();
    assert_eq!((member["id"].as_str(), member["encoding"].as_str()), (Some("m-1"), Some("json")));
    assert_eq!(member["payload"]["address"], "h");
    send_signal(&child, nix::sys::signal::Signal::SIGTERM);
    assert!(exit_status(&mut child).await.success());
    wait_for_children(&cs, &format!("{base}/api"), |n| n == 0, "the instance is gone after SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_usage_errors() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let bad_name = run_zkr(&cs, &["service", "register", "a/b", "--address", "h", "--port", "1"]).await;
    assert_eq!(bad_name.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad_name.stderr));
    let bad_payload =
        run_zkr(&cs, &["service", "register", "a", "--address", "h", "--port", "1", "--payload", "[1]"])
            .await;
    assert_eq!(bad_payload.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_payload.stderr).contains("must be a JSON object"));
    let bad_base = run_zkr(&cs, &["service", "list", "a", "--base", "relative"]).await;
    assert_eq!(bad_base.status.code(), Some(2));
}
