//! What the exec tests share: the `key=value` lines the test programs print.

use std::collections::BTreeMap;
use std::process::Output;

/// The `key=value` lines of a program's stdout, after asserting that it exited 0.
pub fn lines(out: &Output) -> BTreeMap<String, String> {
    assert!(
        out.status.success(),
        "exit {:?}, stdout: {} stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
