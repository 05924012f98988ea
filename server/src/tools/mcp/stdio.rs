//! A stdio server's output as rmcp reads it (one JSON-RPC message a line), with a bound: a line
//! longer than [`MAX_MESSAGE_BYTES`] is not passed on. rmcp drops such a line too, but silently,
//! and the call it answered then waited for the tool timeout; here an oversized result becomes a
//! JSON-RPC error answer to the same request, so the call ends at once.
//!
//! Written here because rmcp's line reader cannot be told what to do with an oversized line, and
//! no crate does this one thing.

use std::{
    pin::Pin,
    sync::LazyLock,
    task::{ready, Context, Poll},
};

use regex::bytes::Regex;
use tokio::io::{AsyncRead, ReadBuf};

/// The largest message a server may send: rmcp's own bound on a line, and on an HTTP message.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How much of an oversized line's start and end is kept, to find which request it answers.
const EDGE_BYTES: usize = 256;
/// How much is read from the server at a time.
const CHUNK_BYTES: usize = 16 * 1024;

/// A JSON-RPC id: a number or a string.
const ID: &str = r#"(?P<id>-?[0-9]+|"(?:[^"\\]|\\.)*")"#;

/// The start of a result message, with its id when it comes first (`{"jsonrpc":"2.0","id":1,
/// "result":...`, `{"result":...`).
static RESULT_START: LazyLock<Regex> = LazyLock::new(|| {
    let pattern = format!(
        r#"^\s*\{{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?(?:"id"\s*:\s*{ID}\s*,\s*)?"result"\s*:"#
    );
    // A constant pattern, compiled by a test: this cannot fail at run time.
    Regex::new(&pattern).expect("the result-start pattern")
});

/// The end of a message whose id comes last (`...,"jsonrpc":"2.0","id":1}`).
static ID_AT_END: LazyLock<Regex> = LazyLock::new(|| {
    let pattern = format!(r#""id"\s*:\s*{ID}\s*\}}\s*$"#);
    Regex::new(&pattern).expect("the id-at-end pattern")
});

/// [`MAX_MESSAGE_BYTES`]-bounded lines of `R`; see the module documentation.
pub struct LineCap<R> {
    inner: R,
    max: usize,
    /// The line being read, while it fits.
    line: Vec<u8>,
    /// Whole lines ready to be read, from `sent` on.
    ready: Vec<u8>,
    sent: usize,
    /// The line being read, once it did not fit: only its edges are kept.
    oversized: Option<Edges>,
    ended: bool,
}

/// The start and end of an oversized line, and its length.
struct Edges {
    head: Vec<u8>,
    tail: Vec<u8>,
    length: usize,
}

impl Edges {
    fn push(&mut self, bytes: &[u8]) {
        self.length += bytes.len();
        let room = EDGE_BYTES.saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..room]);
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > EDGE_BYTES {
            self.tail.drain(..self.tail.len() - EDGE_BYTES);
        }
    }

    /// The error answer to the request this line answered, if it is a result and its id is found.
    fn error_answer(&self) -> Option<Vec<u8>> {
        let start = RESULT_START.captures(&self.head)?;
        let id = match start.name("id") {
            Some(id) => id.as_bytes(),
            None => ID_AT_END.captures(&self.tail)?.name("id")?.as_bytes(),
        };
        let mut answer = br#"{"jsonrpc":"2.0","id":"#.to_vec();
        answer.extend_from_slice(id);
        answer.extend_from_slice(
            format!(
                r#","error":{{"code":-32603,"message":"The MCP server's answer was larger than 16 MiB ({} bytes); it was not read."}}}}"#,
                self.length
            )
            .as_bytes(),
        );
        answer.push(b'\n');
        Some(answer)
    }
}

impl<R> LineCap<R> {
    pub fn new(inner: R) -> Self {
        LineCap {
            inner,
            max: MAX_MESSAGE_BYTES,
            line: Vec::new(),
            ready: Vec::new(),
            sent: 0,
            oversized: None,
            ended: false,
        }
    }

    /// Sorts read bytes into whole lines, and oversized lines into error answers.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|byte| *byte == b'\n');
            let (segment, rest) = bytes.split_at(newline.map_or(bytes.len(), |at| at + 1));
            bytes = rest;
            if self.oversized.is_none() && self.line.len() + segment.len() > self.max {
                let mut edges = Edges {
                    head: Vec::new(),
                    tail: Vec::new(),
                    length: 0,
                };
                edges.push(&self.line);
                self.line = Vec::new();
                self.oversized = Some(edges);
            }
            match &mut self.oversized {
                Some(edges) => edges.push(segment),
                None => self.line.extend_from_slice(segment),
            }
            if newline.is_none() {
                continue;
            }
            match self.oversized.take() {
                None => self.ready.append(&mut self.line),
                Some(edges) => {
                    let answer = edges.error_answer();
                    tracing::warn!(
                        bytes = edges.length,
                        answered = answer.is_some(),
                        "an MCP server sent a message larger than 16 MiB; it was not read"
                    );
                    self.ready.extend(answer.unwrap_or_default());
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.sent < this.ready.len() {
                let n = (this.ready.len() - this.sent).min(buf.remaining());
                buf.put_slice(&this.ready[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.ready.len() {
                    this.ready.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = vec![0; CHUNK_BYTES];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // An unfinished last line goes on as it is (rmcp leaves it unread).
                this.ended = true;
                this.ready.append(&mut this.line);
            } else {
                let filled = read.filled().len();
                this.take(&chunk[..filled]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: Vec<u8>, max: usize) -> String {
        let mut capped = LineCap::new(&input[..]);
        capped.max = max;
        let mut out = String::new();
        capped.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn small_lines_pass_and_an_oversized_result_becomes_an_error_answer() {
        let big = "x".repeat(500);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"a\"}}\n\
             {{\"result\":{{\"text\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":7}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{{\"text\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":\"{big}\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{}}}}\n"
        );
        let out = through(input.into_bytes(), 300).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], r#"{"jsonrpc":"2.0","method":"a"}"#);
        assert!(
            lines[1].starts_with(r#"{"jsonrpc":"2.0","id":7,"error":"#),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with(r#"{"jsonrpc":"2.0","id":"s-1","error":"#),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], r#"{"jsonrpc":"2.0","id":9,"result":{}}"#);
        for line in lines {
            serde_json::from_str::<serde_json::Value>(line).expect("JSON");
        }
    }
}
