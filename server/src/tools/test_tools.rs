//! Tools that exist only with `--enable-test-tools`, for tests and benchmarks.

use app::protocol::ToolErrorKind;
use std::time::Duration;

use serde_json::{json, Value};

use super::{tool_error, Tool, ToolContext, ToolFuture};

/// `sleep {seconds, blocking?, subprocess?}`: waits, printing a tick every half second. The
/// blocking form sleeps in one of the tools' blocking slots, like a call stuck in I/O (events must
/// still flow meanwhile); the subprocess
/// form runs `sleep` as a child process (which cancellation must kill).
pub struct Sleep;

impl Tool for Sleep {
    fn name(&self) -> &'static str {
        "sleep"
    }

    fn description(&self) -> &'static str {
        "Wait for some seconds (testing only)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": 600},
                "blocking": {"type": "boolean"},
                "subprocess": {"type": "boolean"}
            },
            "required": ["seconds"]
        })
    }

    fn display(&self, args: &Value) -> Option<String> {
        args.get("seconds")
            .and_then(Value::as_f64)
            .map(|seconds| format!("Sleeping {seconds} s"))
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let seconds = args
                .get("seconds")
                .and_then(Value::as_f64)
                .filter(|seconds| (0.0..=600.0).contains(seconds))
                .ok_or_else(|| {
                    tool_error(
                        ToolErrorKind::InvalidArguments,
                        "`seconds` must be a number from 0 to 600",
                    )
                })?;
            let duration = Duration::from_secs_f64(seconds);
            if args.get("subprocess").and_then(Value::as_bool) == Some(true) {
                let mut child = tokio::process::Command::new("sleep")
                    .arg(format!("{seconds}"))
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|error| {
                        tool_error(ToolErrorKind::Io, format!("Cannot start `sleep`: {error}"))
                    })?;
                if let Some(pid) = child.id() {
                    context.output.write(&format!("started process {pid}\n"));
                }
                tokio::select! {
                    status = child.wait() => {
                        let status = status.map_err(|error| tool_error(ToolErrorKind::Io, error.to_string()))?;
                        return Ok(format!("The process exited with {status}."));
                    }
                    _ = context.cancel.cancelled() => {
                        let _ = child.kill().await;
                        return Err(tool_error(ToolErrorKind::Cancelled, "Killed the process."));
                    }
                }
            }
            if args.get("blocking").and_then(Value::as_bool) == Some(true) {
                // Stands for a call stuck in I/O: the thread ignores cancellation.
                context
                    .blocking(move || std::thread::sleep(duration))
                    .await?;
                return Ok(format!("Slept {seconds} s on the blocking pool."));
            }
            let deadline = tokio::time::Instant::now() + duration;
            let mut tick = 0;
            while tokio::time::Instant::now() < deadline {
                let step = (deadline - tokio::time::Instant::now()).min(Duration::from_millis(500));
                tokio::select! {
                    _ = tokio::time::sleep(step) => {}
                    _ = context.cancel.cancelled() => return Err(tool_error(ToolErrorKind::Cancelled, "Cancelled while sleeping.")),
                }
                tick += 1;
                context.output.write(&format!("tick {tick}\n"));
            }
            Ok(format!("Slept {seconds} s."))
        })
    }
}

/// `fail {message?, panic?, panic_early?}`: ends with an error, or panics (`panic_early`: before
/// it returns its future, as a tool that checks its arguments with `unwrap` would).
pub struct Fail;

impl Tool for Fail {
    fn name(&self) -> &'static str {
        "fail"
    }

    fn description(&self) -> &'static str {
        "Fail on purpose (testing only)."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"message": {"type": "string"}, "panic": {"type": "boolean"}, "panic_early": {"type": "boolean"}}})
    }

    fn call(&self, args: Value, _context: ToolContext) -> ToolFuture {
        if args.get("panic_early").and_then(Value::as_bool) == Some(true) {
            panic!("panicked before returning its future");
        }
        Box::pin(async move {
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("failed on purpose")
                .to_owned();
            if args.get("panic").and_then(Value::as_bool) == Some(true) {
                panic!("{message}");
            }
            Err(tool_error(ToolErrorKind::Failed, message))
        })
    }
}
