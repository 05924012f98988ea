//! Reads `data:` payloads from a Server-Sent Events byte stream, across chunk boundaries.

/// Feed bytes in; take complete `data` payloads out (one per event, multi-line data joined by
/// `\n`). Comments, `event:` and `id:` lines are skipped.
#[derive(Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    data: Vec<String>,
}

impl SseDecoder {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        // Lines are read in place and the consumed prefix dropped once: linear in the input, even
        // when one chunk holds thousands of events (a resumed stream).
        let mut start = 0;
        while let Some(length) = self.buffer[start..].iter().position(|b| *b == b'\n') {
            let line = String::from_utf8_lossy(&self.buffer[start..start + length]);
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(std::mem::take(&mut self.data).join("\n"));
                }
            } else if let Some(data) = line.strip_prefix("data:") {
                self.data
                    .push(data.strip_prefix(' ').unwrap_or(data).to_owned());
            }
            start += length + 1;
        }
        self.buffer.drain(..start);
        events
    }

    /// Bytes of a line not yet ended: a sender that never ends one must be stopped.
    pub fn pending_len(&self) -> usize {
        self.buffer.len() + self.data.iter().map(String::len).sum::<usize>()
    }

    /// A final event not followed by a blank line.
    pub fn finish(&mut self) -> Option<String> {
        (!self.data.is_empty()).then(|| std::mem::take(&mut self.data).join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let stream = b"data: {\"a\":1}\n\n: comment\nevent: x\ndata: line1\ndata: line2\r\n\r\ndata: [DONE]\n\n";
        for split in 0..stream.len() {
            let mut decoder = SseDecoder::default();
            let mut events = decoder.push(&stream[..split]);
            events.extend(decoder.push(&stream[split..]));
            assert_eq!(
                events,
                ["{\"a\":1}", "line1\nline2", "[DONE]"],
                "split at {split}"
            );
        }
    }
}
