//! An MCP tool result as the text a tool returns: text blocks as they are, a readable line in
//! place of images, audio and resources (their bytes never reach the model or the events). The
//! run sanitizes and truncates it like every tool result.

use app::protocol::ToolError;
use app::protocol::ToolErrorKind;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::tools::tool_error;

pub fn to_output(result: CallToolResult) -> Result<String, ToolError> {
    let mut parts: Vec<String> = result.content.into_iter().map(block_text).collect();
    if parts.is_empty() {
        if let Some(structured) = result.structured_content {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            "The tool reported an error.".to_owned()
        } else {
            text
        };
        return Err(tool_error(ToolErrorKind::ToolError, message));
    }
    Ok(text)
}

fn block_text(block: ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text,
        ContentBlock::Image(image) => {
            format!("[image: {}, {}]", image.mime_type, base64_size(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {}]", audio.mime_type, base64_size(&audio.data))
        }
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {}]",
                mime_type.as_deref().unwrap_or("binary"),
                base64_size(&blob)
            ),
            _ => "[resource of an unknown kind]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => match link.description {
            Some(description) => format!(
                "[resource link: {} <{}>: {description}]",
                link.name, link.uri
            ),
            None => format!("[resource link: {} <{}>]", link.name, link.uri),
        },
        _ => "[content of an unknown kind]".to_owned(),
    }
}

/// The decoded size of base64 data, for people: "1.2 KB".
fn base64_size(data: &str) -> String {
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_become_a_line_and_errors_an_error() {
        let image = ContentBlock::image("iVBORw0KGgo=", "image/png");
        let result = CallToolResult::success(vec![ContentBlock::text("before"), image]);
        assert_eq!(
            to_output(result).as_deref(),
            Ok("before\n[image: image/png, 8 bytes]")
        );
        let failed = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        let error = to_output(failed).err().map(|error| error.kind);
        assert_eq!(error, Some(ToolErrorKind::ToolError));
    }
}
