//! Markdown from the model, rendered safely. The text is parsed (pulldown-cmark) into a small tree
//! and drawn as Leptos views: every piece of model text becomes a text node, so raw HTML in it
//! shows as text and never runs. Links keep only `http`, `https` and `mailto` targets and open
//! with `rel="noopener noreferrer"`; images are shown as links, so nothing loads by itself. Code
//! blocks get a copy button.

use leptos::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Text(String),
    Code(String),
    SoftBreak,
    HardBreak,
    Rule,
    CodeBlock { language: String, code: String },
    Element { kind: Kind, children: Vec<Node> },
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Paragraph,
    Heading(u8),
    Quote,
    List(Option<u64>),
    Item,
    Emphasis,
    Strong,
    Strikethrough,
    /// A link with an allowed target, or `None` when the target was dropped.
    Link(Option<String>),
    Table,
    TableHead,
    TableRow,
    TableCell,
}

/// Only these link targets survive; anything else (`javascript:`, `data:`, relative) is dropped.
pub fn safe_href(url: &str) -> Option<String> {
    let trimmed = url.trim();
    let lower = trimmed.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:"))
        .then(|| trimmed.to_owned())
}

fn parse(markdown: &str) -> Vec<Node> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    // The stack of open elements; the bottom holds the document's top-level nodes.
    let mut stack: Vec<(Option<Kind>, Vec<Node>)> = vec![(None, Vec::new())];
    let mut code_block: Option<(String, String)> = None;
    for event in Parser::new_ext(markdown, options) {
        if let Some((_, code)) = code_block.as_mut() {
            match event {
                Event::Text(text) => {
                    code.push_str(&text);
                    continue;
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((language, code)) = code_block.take() {
                        let code = code.trim_end_matches('\n').to_owned();
                        push(&mut stack, Node::CodeBlock { language, code });
                    }
                    continue;
                }
                _ => continue,
            }
        }
        match event {
            Event::Start(tag) => match tag {
                Tag::CodeBlock(kind) => {
                    let language = match kind {
                        CodeBlockKind::Fenced(info) => {
                            info.split_whitespace().next().unwrap_or("").to_owned()
                        }
                        CodeBlockKind::Indented => String::new(),
                    };
                    code_block = Some((language, String::new()));
                }
                other => stack.push((Some(kind_of(other)), Vec::new())),
            },
            Event::End(TagEnd::CodeBlock) => {}
            Event::End(_) => {
                if stack.len() > 1 {
                    if let Some((Some(kind), children)) = stack.pop() {
                        push(&mut stack, Node::Element { kind, children });
                    }
                }
            }
            // Raw HTML is text, like everything else the model writes.
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                push(&mut stack, Node::Text(text.into_string()))
            }
            Event::Code(code) => push(&mut stack, Node::Code(code.into_string())),
            Event::SoftBreak => push(&mut stack, Node::SoftBreak),
            Event::HardBreak => push(&mut stack, Node::HardBreak),
            Event::Rule => push(&mut stack, Node::Rule),
            Event::FootnoteReference(text) | Event::InlineMath(text) | Event::DisplayMath(text) => {
                push(&mut stack, Node::Text(text.into_string()))
            }
            Event::TaskListMarker(done) => push(
                &mut stack,
                Node::Text(if done { "☑ " } else { "☐ " }.to_owned()),
            ),
        }
    }
    // Close whatever a still-streaming text left open.
    while stack.len() > 1 {
        if let Some((Some(kind), children)) = stack.pop() {
            push(&mut stack, Node::Element { kind, children });
        }
    }
    if let Some((language, code)) = code_block {
        push(&mut stack, Node::CodeBlock { language, code });
    }
    stack.pop().map(|(_, nodes)| nodes).unwrap_or_default()
}

fn push(stack: &mut [(Option<Kind>, Vec<Node>)], node: Node) {
    if let Some((_, children)) = stack.last_mut() {
        children.push(node);
    }
}

fn kind_of(tag: Tag<'_>) -> Kind {
    match tag {
        Tag::Heading { level, .. } => Kind::Heading(match level {
            HeadingLevel::H1 => 1,
            HeadingLevel::H2 => 2,
            HeadingLevel::H3 => 3,
            HeadingLevel::H4 => 4,
            HeadingLevel::H5 => 5,
            HeadingLevel::H6 => 6,
        }),
        Tag::BlockQuote(_) => Kind::Quote,
        Tag::List(start) => Kind::List(start),
        Tag::Item => Kind::Item,
        Tag::Emphasis => Kind::Emphasis,
        Tag::Strong => Kind::Strong,
        Tag::Strikethrough => Kind::Strikethrough,
        Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
            Kind::Link(safe_href(&dest_url))
        }
        Tag::Table(_) => Kind::Table,
        Tag::TableHead => Kind::TableHead,
        Tag::TableRow => Kind::TableRow,
        Tag::TableCell => Kind::TableCell,
        _ => Kind::Paragraph,
    }
}

fn render(nodes: Vec<Node>) -> AnyView {
    nodes.into_iter().map(render_node).collect_view().into_any()
}

fn render_node(node: Node) -> AnyView {
    match node {
        Node::Text(text) => text.into_any(),
        Node::Code(code) => view! { <code>{code}</code> }.into_any(),
        Node::SoftBreak => "\n".into_any(),
        Node::HardBreak => view! { <br /> }.into_any(),
        Node::Rule => view! { <hr /> }.into_any(),
        Node::CodeBlock { language, code } => view! { <CodeBlock language code /> }.into_any(),
        Node::Element { kind, children } => {
            let inner = render(children);
            match kind {
                Kind::Paragraph => view! { <p>{inner}</p> }.into_any(),
                Kind::Heading(1) => view! { <h3>{inner}</h3> }.into_any(),
                Kind::Heading(2) => view! { <h4>{inner}</h4> }.into_any(),
                Kind::Heading(_) => view! { <h5>{inner}</h5> }.into_any(),
                Kind::Quote => view! { <blockquote>{inner}</blockquote> }.into_any(),
                Kind::List(None) => view! { <ul>{inner}</ul> }.into_any(),
                Kind::List(Some(start)) => view! { <ol start=start>{inner}</ol> }.into_any(),
                Kind::Item => view! { <li>{inner}</li> }.into_any(),
                Kind::Emphasis => view! { <em>{inner}</em> }.into_any(),
                Kind::Strong => view! { <strong>{inner}</strong> }.into_any(),
                Kind::Strikethrough => view! { <del>{inner}</del> }.into_any(),
                Kind::Link(Some(href)) => {
                    view! { <a href=href target="_blank" rel="noopener noreferrer">{inner}</a> }
                        .into_any()
                }
                Kind::Link(None) => view! { <span class="unsafe-link">{inner}</span> }.into_any(),
                Kind::Table => {
                    view! { <div class="table-scroll"><table>{inner}</table></div> }.into_any()
                }
                Kind::TableHead => view! { <thead><tr>{inner}</tr></thead> }.into_any(),
                Kind::TableRow => view! { <tr>{inner}</tr> }.into_any(),
                Kind::TableCell => view! { <td>{inner}</td> }.into_any(),
            }
        }
    }
}

/// A fenced code block with its language and a copy button.
#[component]
fn CodeBlock(language: String, code: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let text = code.clone();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let clipboard = window().navigator().clipboard();
            let _ = clipboard.write_text(&text);
            copied.set(true);
            set_timeout(
                move || copied.set(false),
                std::time::Duration::from_millis(1500),
            );
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &text;
    };
    view! {
        <div class="code-block">
            <div class="code-header">
                <span class="code-language">{language}</span>
                <button type="button" class="copy" on:click=copy aria-label="Copy code">
                    {move || if copied.get() { "Copied" } else { "Copy" }}
                </button>
            </div>
            <pre><code>{code}</code></pre>
        </div>
    }
    .into_any()
}

/// Renders markdown text as safe views.
#[component]
pub fn Markdown(#[prop(into)] text: String) -> impl IntoView {
    view! { <div class="markdown">{render(parse(&text))}</div> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text() {
        let nodes = parse("Hi <script>alert(1)</script>\n\n<div onclick=x>block</div>");
        let text = format!("{nodes:?}");
        assert!(text.contains("Text(\"<script>\")"), "{text}");
        assert!(!text.contains("Html"), "{text}");
    }

    #[test]
    fn only_safe_link_targets_survive() {
        assert_eq!(
            safe_href("https://example.com/a"),
            Some("https://example.com/a".into())
        );
        assert_eq!(safe_href("mailto:a@b.c"), Some("mailto:a@b.c".into()));
        for unsafe_target in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,x",
            "/relative",
            "file:///etc/passwd",
        ] {
            assert_eq!(safe_href(unsafe_target), None, "{unsafe_target}");
        }
        let nodes = parse("[click](javascript:alert(1)) ![img](https://tracker.example/p.png)");
        let text = format!("{nodes:?}");
        assert!(text.contains("Link(None)"), "{text}");
        assert!(
            text.contains("Link(Some(\"https://tracker.example/p.png\"))"),
            "images become links: {text}"
        );
    }

    #[test]
    fn unfinished_markdown_from_a_stream_still_parses() {
        let nodes = parse("Some **bold and\n\n```rust\nfn main() {");
        assert!(
            matches!(nodes.last(), Some(Node::CodeBlock { language, code }) if language == "rust" && code.starts_with("fn main"))
        );
    }
}
