//! `--log-format json`'s promise: every line a verb writes to stderr is one JSON object with a
//! level and a message. The json_logs test runs every verb against it; the tests whose worlds
//! are the only ones where a verb can succeed (smoke, promote, fat-wheel, test-report) run it
//! there too.

/// Panics, naming `verb` and the line, unless every line of `stderr` is a JSON log object.
#[track_caller]
pub fn assert_json_lines(verb: &str, stderr: &[u8]) {
    let stderr = String::from_utf8_lossy(stderr);
    for line in stderr.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("{verb}: stderr line is not JSON ({e}): {line:?}\nwhole stderr:\n{stderr}")
        });
        assert!(
            value["level"].is_string() && value["fields"]["message"].is_string(),
            "{verb}: {line}"
        );
    }
}
