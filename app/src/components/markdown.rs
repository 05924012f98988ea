//! Markdown from the model, rendered safely. The text is parsed (pulldown-cmark) into a small tree
//! and drawn as Leptos views: every piece of model text becomes a text node, so raw HTML in it
//! shows as text and never runs. Links keep only `http`, `https` and `mailto` targets and open
//! with `rel="noopener noreferrer"`; images are shown as links, so nothing loads by itself. Code
//! blocks get a copy button.
//!
//! The HTML drawn here must be exactly what a browser's parser builds from it, or hydration breaks
//! on the first reload: table rows sit in `<tbody>` and header cells are `<th>`; a link or image
//! inside a link becomes a `<span>` (the parser would close the outer `<a>`); nothing block-level
//! goes into a `<p>`; text never holds a NUL (the parser drops it). `end2end/corpus/` holds the
//! documents a browser test reloads to prove it; add new constructs there.
//!
//! Nesting is bounded ([`MAX_DEPTH`]): a hostile answer such as `>` 2,000 times or `- ` 1,000
//! times would otherwise build a tree as deep as it is long, and drawing and dropping it recurse
//! once per level, overflowing a server worker's stack (and the wasm's). Elements deeper than the
//! bound are not opened: their text joins the deepest element drawn. The parser
//! (pulldown-cmark) keeps its own tree in flat arrays, so nothing else recurses per level.

use leptos::prelude::*;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

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
    /// An image, shown as a link to it (nothing loads by itself); its children are the alt text.
    Image(Option<String>),
    Table(Vec<Alignment>),
    TableHead,
    TableRow,
    TableCell,
    FootnoteDefinition(String),
    /// A raw HTML block: shown as its text.
    RawHtmlBlock,
    /// Anything this renderer does not know: its children, inline.
    Other,
}

/// Only these link targets survive; anything else (`javascript:`, `data:`, relative) is dropped.
pub fn safe_href(url: &str) -> Option<String> {
    let trimmed = url.trim();
    let lower = trimmed.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:"))
        .then(|| trimmed.to_owned())
}

/// The deepest nesting of elements drawn; deeper elements become their text. Well past what a
/// person writes (a quote in a list in a quote is 4), and small enough that drawing and dropping
/// the tree, which recurse per level, need little stack.
pub const MAX_DEPTH: usize = 32;

/// Open elements (the bottom holds the document's top-level nodes), and how many start tags
/// past [`MAX_DEPTH`] were not opened (their ends close nothing).
struct Open {
    stack: Vec<(Option<Kind>, Vec<Node>)>,
    flattened: usize,
}

impl Open {
    fn start(&mut self, kind: Kind) {
        // A table needs two levels below it (head or row, cell); it is drawn whole or as text.
        let needs = if matches!(kind, Kind::Table(_)) { 3 } else { 1 };
        if self.flattened > 0 || self.stack.len() - 1 + needs > MAX_DEPTH {
            self.flattened += 1;
        } else {
            self.stack.push((Some(kind), Vec::new()));
        }
    }

    fn end(&mut self, tag: TagEnd) {
        if self.flattened > 0 {
            self.flattened -= 1;
            // Flattened blocks stay apart.
            let inline = matches!(
                tag,
                TagEnd::Emphasis
                    | TagEnd::Strong
                    | TagEnd::Strikethrough
                    | TagEnd::Superscript
                    | TagEnd::Subscript
                    | TagEnd::Link
                    | TagEnd::Image
            );
            if !inline {
                self.push(Node::SoftBreak);
            }
        } else {
            self.close_one();
        }
    }

    fn close_one(&mut self) {
        if self.stack.len() > 1 {
            if let Some((Some(kind), children)) = self.stack.pop() {
                self.push(Node::Element { kind, children });
            }
        }
    }

    fn push(&mut self, node: Node) {
        let node = match node {
            // The HTML parser drops NUL from text, so the DOM would not match what was rendered.
            Node::Text(text) if text.contains('\0') => Node::Text(text.replace('\0', "\u{FFFD}")),
            Node::Code(code) if code.contains('\0') => Node::Code(code.replace('\0', "\u{FFFD}")),
            Node::CodeBlock { language, code } if code.contains('\0') => Node::CodeBlock {
                language,
                code: code.replace('\0', "\u{FFFD}"),
            },
            node => node,
        };
        if let Some((_, children)) = self.stack.last_mut() {
            children.push(node);
        }
    }

    /// Closes whatever a still-streaming text left open, and answers the top-level nodes.
    fn finish(mut self) -> Vec<Node> {
        while self.stack.len() > 1 {
            self.close_one();
        }
        self.stack.pop().map(|(_, nodes)| nodes).unwrap_or_default()
    }
}

fn parse(markdown: &str) -> Vec<Node> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut open = Open {
        stack: vec![(None, Vec::new())],
        flattened: 0,
    };
    let mut code_block: Option<(String, String)> = None;
    for event in Parser::new_ext(markdown, options) {
        if let Some((_, code)) = code_block.as_mut() {
            match event {
                Event::Text(text) => code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((language, code)) = code_block.take() {
                        let code = code.trim_end_matches('\n').to_owned();
                        open.push(Node::CodeBlock { language, code });
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                code_block = Some((language, String::new()));
            }
            Event::Start(tag) => open.start(kind_of(tag)),
            Event::End(TagEnd::CodeBlock) => {}
            Event::End(tag) => open.end(tag),
            event => open.push(leaf(event)),
        }
    }
    if let Some((language, code)) = code_block {
        open.push(Node::CodeBlock { language, code });
    }
    open.finish()
}

/// The node for an event that opens and closes nothing.
fn leaf(event: Event<'_>) -> Node {
    match event {
        // Raw HTML is text, like everything else the model writes.
        Event::Text(text)
        | Event::Html(text)
        | Event::InlineHtml(text)
        | Event::InlineMath(text)
        | Event::DisplayMath(text) => Node::Text(text.into_string()),
        Event::FootnoteReference(label) => Node::Element {
            kind: Kind::Other,
            children: vec![Node::Text(format!("[{label}]"))],
        },
        Event::Code(code) => Node::Code(code.into_string()),
        Event::SoftBreak => Node::SoftBreak,
        Event::HardBreak => Node::HardBreak,
        Event::Rule => Node::Rule,
        Event::TaskListMarker(done) => Node::Text(if done { "☑ " } else { "☐ " }.to_owned()),
        Event::Start(_) | Event::End(_) => Node::Text(String::new()),
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
        Tag::Paragraph => Kind::Paragraph,
        Tag::Link { dest_url, .. } => Kind::Link(safe_href(&dest_url)),
        Tag::Image { dest_url, .. } => Kind::Image(safe_href(&dest_url)),
        Tag::Table(alignments) => Kind::Table(alignments),
        Tag::TableHead => Kind::TableHead,
        Tag::TableRow => Kind::TableRow,
        Tag::TableCell => Kind::TableCell,
        Tag::FootnoteDefinition(label) => Kind::FootnoteDefinition(label.into_string()),
        Tag::HtmlBlock => Kind::RawHtmlBlock,
        _ => Kind::Other,
    }
}

/// Where a node sits, for the few places where HTML nesting rules change what may be drawn.
#[derive(Clone, Copy, Default)]
struct Context {
    /// Inside a link: another `<a>` would be split by the HTML parser.
    in_link: bool,
    /// Inside a table header row: cells are `<th>`.
    in_head: bool,
}

fn render(nodes: Vec<Node>, context: Context) -> AnyView {
    nodes
        .into_iter()
        .map(|node| render_node(node, context))
        .collect_view()
        .into_any()
}

fn render_node(node: Node, context: Context) -> AnyView {
    match node {
        Node::Text(text) => text.into_any(),
        Node::Code(code) => view! { <code>{code}</code> }.into_any(),
        Node::SoftBreak => "\n".into_any(),
        Node::HardBreak => view! { <br /> }.into_any(),
        Node::Rule => view! { <hr /> }.into_any(),
        Node::CodeBlock { language, code } => view! { <CodeBlock language code /> }.into_any(),
        Node::Element { kind, children } => render_element(kind, children, context),
    }
}

fn render_element(kind: Kind, children: Vec<Node>, context: Context) -> AnyView {
    match kind {
        Kind::Table(alignments) => return render_table(&alignments, children),
        Kind::Link(Some(href)) if !context.in_link => {
            let inner = render(
                children,
                Context {
                    in_link: true,
                    ..context
                },
            );
            return view! { <a href=href target="_blank" rel="noopener noreferrer">{inner}</a> }
                .into_any();
        }
        Kind::Image(Some(href)) if !context.in_link => {
            let inner = render(
                children,
                Context {
                    in_link: true,
                    ..context
                },
            );
            return view! {
                <a class="image-link" href=href target="_blank" rel="noopener noreferrer">
                    "🖼 "{inner}
                </a>
            }
            .into_any();
        }
        _ => {}
    }
    let inner = render(children, context);
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
        // An unsafe target, or a link inside a link: the text stays, the link goes.
        Kind::Link(_) => view! { <span class="unsafe-link">{inner}</span> }.into_any(),
        Kind::Image(_) => view! { <span class="image-alt">{inner}</span> }.into_any(),
        Kind::FootnoteDefinition(label) => view! {
            <div class="footnote">
                <span class="footnote-label">{format!("[{label}]")}</span>
                {inner}
            </div>
        }
        .into_any(),
        Kind::RawHtmlBlock => view! { <p class="raw-html">{inner}</p> }.into_any(),
        // Cells and rows outside a table cannot be produced by the parser; drawn inline anyway.
        Kind::Other | Kind::TableHead | Kind::TableRow | Kind::TableCell | Kind::Table(_) => {
            view! { <span>{inner}</span> }.into_any()
        }
    }
}

/// A table as the HTML parser would build it: `<thead>` with `<th>` cells, rows in `<tbody>`.
fn render_table(alignments: &[Alignment], children: Vec<Node>) -> AnyView {
    let mut head = None;
    let mut rows = Vec::new();
    for child in children {
        match child {
            Node::Element {
                kind: Kind::TableHead,
                children,
            } => head = Some(children),
            Node::Element {
                kind: Kind::TableRow,
                children,
            } => rows.push(children),
            _ => {}
        }
    }
    let head = head.map(|cells| {
        view! { <thead><tr>{render_cells(alignments, cells, true)}</tr></thead> }
    });
    let body = (!rows.is_empty()).then(|| {
        let rows = rows
            .into_iter()
            .map(|cells| view! { <tr>{render_cells(alignments, cells, false)}</tr> })
            .collect_view();
        view! { <tbody>{rows}</tbody> }
    });
    view! { <div class="table-scroll"><table>{head}{body}</table></div> }.into_any()
}

fn render_cells(alignments: &[Alignment], cells: Vec<Node>, head: bool) -> AnyView {
    let context = Context {
        in_head: head,
        ..Context::default()
    };
    cells
        .into_iter()
        .enumerate()
        .filter_map(|(index, cell)| match cell {
            Node::Element {
                kind: Kind::TableCell,
                children,
            } => Some((index, children)),
            _ => None,
        })
        .map(|(index, children)| {
            let class = match alignments.get(index) {
                Some(Alignment::Left) => "align-left",
                Some(Alignment::Center) => "align-center",
                Some(Alignment::Right) => "align-right",
                _ => "",
            };
            let inner = render(children, context);
            if context.in_head {
                view! { <th class=class>{inner}</th> }.into_any()
            } else {
                view! { <td class=class>{inner}</td> }.into_any()
            }
        })
        .collect_view()
        .into_any()
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
    view! { <div class="markdown">{render(parse(&text), Context::default())}</div> }
}

/// Markdown that grows (a streaming answer): the text is cut into top-level blocks that later text
/// cannot change, each parsed and drawn once; only the last, unfinished one is parsed again as the
/// text grows. A stored answer goes through the same cuts, so it is the same DOM.
#[component]
pub fn StreamingMarkdown(#[prop(into)] text: Signal<String>) -> impl IntoView {
    let chunks = move || {
        text.with(|text| {
            stable_chunks(text)
                .map(|(start, chunk)| (start, chunk.to_owned()))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="markdown">
            <For each=chunks key=|chunk| chunk.clone() let:chunk>
                {render(parse(&chunk.1), Context::default())}
            </For>
        </div>
    }
}

/// Cuts `text` into pieces that parse on their own exactly as they do inside the whole: a cut
/// falls only on a blank line outside fenced code, before a line that starts a new block and
/// cannot continue the one before (not indented, not a list item, not a definition). Documents
/// whose parts refer to each other (footnotes, link definitions) or with raw HTML blocks that may
/// span blank lines stay whole. Yields (byte offset, piece).
pub fn stable_chunks(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut cuts = vec![0];
    if !stays_whole(text) {
        let mut fence: Option<(u8, usize)> = None;
        let mut previous_blank = false;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim_start_matches(' ');
            let indented = line.len() - trimmed.len() >= 4;
            let blank = line.trim().is_empty();
            match fence {
                Some((byte, len)) => {
                    if !indented && closes_fence(trimmed, byte, len) {
                        fence = None;
                    }
                    previous_blank = false;
                }
                None => {
                    if previous_blank && !blank && starts_new_block(line) {
                        cuts.push(offset);
                    }
                    if !indented {
                        fence = opening_fence(trimmed);
                    }
                    previous_blank = blank;
                }
            }
            offset += line.len();
        }
    }
    cuts.push(text.len());
    let pieces: Vec<(usize, usize)> = cuts
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(start, end)| end > start)
        .collect();
    pieces
        .into_iter()
        .map(move |(start, end)| (start, &text[start..end]))
}

/// Footnotes and link definitions tie distant parts together; HTML blocks of kinds 1 to 5 may
/// hold blank lines.
fn stays_whole(text: &str) -> bool {
    const SPANNING: [&str; 6] = ["!", "?", "pre", "script", "style", "textarea"];
    text.contains("[^")
        || text.contains("]:")
        || text.match_indices('<').any(|(at, _)| {
            let rest = text.as_bytes().get(at + 1..).unwrap_or_default();
            SPANNING.iter().any(|tag| {
                rest.len() >= tag.len() && rest[..tag.len()].eq_ignore_ascii_case(tag.as_bytes())
            })
        })
}

fn opening_fence(line: &str) -> Option<(u8, usize)> {
    let byte = *line.as_bytes().first()?;
    if byte != b'`' && byte != b'~' {
        return None;
    }
    let len = line.bytes().take_while(|&b| b == byte).count();
    (len >= 3 && !(byte == b'`' && line[len..].contains('`'))).then_some((byte, len))
}

fn closes_fence(line: &str, byte: u8, len: usize) -> bool {
    let run = line.bytes().take_while(|&b| b == byte).count();
    run >= len && line[run..].trim().is_empty()
}

/// A line after a blank line that surely starts a block of its own.
fn starts_new_block(line: &str) -> bool {
    let bytes = line.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    let spaced = |at: usize| bytes.get(at).is_none_or(|b| b.is_ascii_whitespace());
    let bullet = matches!(first, b'-' | b'*' | b'+') && spaced(1);
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let ordered = (1..=9).contains(&digits) && matches!(bytes.get(digits), Some(b'.' | b')'));
    !first.is_ascii_whitespace() && !bullet && !ordered && first != b'['
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text node of a tree, in order.
    fn texts(nodes: &[Node]) -> String {
        nodes
            .iter()
            .map(|node| match node {
                Node::Text(text) => text.clone(),
                Node::Element { children, .. } => texts(children),
                _ => String::new(),
            })
            .collect()
    }

    const RAW_HTML: &str = "Hi <script>alert(1)</script>\n\n<div onclick=x>block</div>";

    #[test]
    fn raw_html_is_text() {
        // The inline and the block HTML are kept whole, as text nodes.
        let text = texts(&parse(RAW_HTML));
        assert!(text.contains("<script>alert(1)</script>"), "{text}");
        assert!(text.contains("<div onclick=x>block</div>"), "{text}");
    }

    /// Drawn, the HTML shows as text: escaped, never an element.
    #[cfg(feature = "ssr")]
    #[test]
    fn raw_html_is_drawn_as_text() {
        // Without the hydration markers (`<!>`) between text nodes.
        let out = html(RAW_HTML).replace("<!>", "");
        assert!(
            out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{out}"
        );
        assert!(
            out.contains("&lt;div onclick=x&gt;block&lt;/div&gt;"),
            "{out}"
        );
        assert!(
            !out.contains("<script") && !out.contains("<div onclick"),
            "{out}"
        );
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
            text.contains("Image(Some(\"https://tracker.example/p.png\"))"),
            "images become links: {text}"
        );
    }

    fn pieces(text: &str) -> Vec<&str> {
        stable_chunks(text).map(|(_, piece)| piece).collect()
    }

    #[test]
    fn streaming_markdown_is_cut_only_where_later_text_cannot_reach_back() {
        assert_eq!(
            pieces("# Title\n\nOne.\n\n| a |\n|---|\n| 1 |\n"),
            ["# Title\n\n", "One.\n\n", "| a |\n|---|\n| 1 |\n"]
        );
        // Loose lists, indented continuations and code with blank lines stay in one piece.
        assert_eq!(pieces("1. a\n\n2. b\n\n   more\n").len(), 1);
        assert_eq!(pieces("```\nx\n\ny\n```\n\nafter").len(), 2);
        assert_eq!(pieces("~~~~\nx\n\n~~~\nstill code\n").len(), 1);
        assert_eq!(pieces("- a\n\n- b").len(), 1);
        // Parts that refer to each other keep the document whole.
        assert_eq!(pieces("Note[^1].\n\n[^1]: here").len(), 1);
        assert_eq!(pieces("[x][y]\n\n[y]: https://e.example").len(), 1);
        assert_eq!(pieces("<!--\n\n-->\n\ntext").len(), 1);
        assert_eq!(pieces("<PRE>\n\n</PRE>").len(), 1);
        assert_eq!(pieces(""), Vec::<&str>::new());
        // The pieces are the text.
        let text = "a\n\nb\n\n```\nc\n\nd";
        assert_eq!(pieces(text).concat(), text);
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn pieces_render_as_the_whole_does() {
        let corpus = concat!(
            "# Heading\n\nA paragraph with **bold**.\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\n",
            "> quote\n\n> another\n\n1. one\n\n2. two\n\n    code\n\n***\n\n",
            "```rust\nfn main() {}\n\n// more\n```\n\nLast line  \nbreak"
        );
        // Hydration markers (`<!>`) end each piece; the elements are the same.
        let bare = |html: String| html.replace("<!>", "");
        let pieces: String = stable_chunks(corpus)
            .map(|(_, piece)| bare(html(piece)))
            .collect();
        assert_eq!(pieces, bare(html(corpus)));
    }

    #[test]
    fn unfinished_markdown_from_a_stream_still_parses() {
        let nodes = parse("Some **bold and\n\n```rust\nfn main() {");
        assert!(
            matches!(nodes.last(), Some(Node::CodeBlock { language, code }) if language == "rust" && code.starts_with("fn main"))
        );
    }

    // Rendering to HTML needs the `ssr` feature, which `scripts/test.sh` turns on (the server
    // crate depends on it).
    #[cfg(feature = "ssr")]
    fn html(markdown: &str) -> String {
        // A code block's copy button holds a signal, which needs an owner.
        Owner::new().with(|| render(parse(markdown), Context::default()).to_html())
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn tables_have_a_body_and_header_cells() {
        let out = html("| a | b |\n|:--|--:|\n| 1 | 2 |\n| 3 | 4 |");
        assert!(
            out.contains("<thead><tr><th class=\"align-left\">"),
            "{out}"
        );
        assert!(
            out.contains("<tbody><tr><td class=\"align-left\">"),
            "{out}"
        );
        assert!(out.contains("<td class=\"align-right\">"), "{out}");
        assert_eq!(out.matches("<tr>").count(), 3, "{out}");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn nothing_links_inside_a_link() {
        let out = html("[![badge](https://img.example/b.svg)](https://example.com) [a [b](https://b.example)](https://a.example)");
        assert_eq!(out.matches("<a ").count(), 2, "{out}");
        assert!(out.contains("<span class=\"image-alt\">badge"), "{out}");
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn footnotes_task_lists_and_nul_are_drawn_safely() {
        let out = html("Note[^1].\n\n[^1]: The **note**.\n\n- [x] done\n- [ ] open\n\nnul\0here");
        assert!(out.contains("<div class=\"footnote\">"), "{out}");
        assert!(!out.contains("<p><div"), "{out}");
        assert!(out.contains("☑ "), "{out}");
        assert!(!out.contains('\0'), "{out}");
    }

    /// The documents of `end2end/corpus/hostile.json`: (name, text).
    fn hostile_corpus() -> Vec<(String, String)> {
        let corpus: serde_json::Value =
            crate::json::parse(include_str!("../../../end2end/corpus/hostile.json"))
                .expect("hostile.json is JSON");
        let documents = corpus["documents"].as_array().expect("documents");
        documents
            .iter()
            .map(|document| {
                let parts = document["parts"].as_array().expect("parts");
                let text = parts
                    .iter()
                    .map(|part| {
                        let count = part[1].as_u64().expect("count") as usize;
                        part[0].as_str().expect("string").repeat(count)
                    })
                    .collect();
                (document["name"].as_str().expect("name").to_owned(), text)
            })
            .collect()
    }

    /// How many elements deep the tree is.
    fn depth(nodes: &[Node]) -> usize {
        // Iterative, so that measuring a tree too deep does not overflow the test's stack.
        let mut deepest = 0;
        let mut pending: Vec<(&Node, usize)> = nodes.iter().map(|node| (node, 1)).collect();
        while let Some((node, level)) = pending.pop() {
            if let Node::Element { children, .. } = node {
                deepest = deepest.max(level);
                pending.extend(children.iter().map(|child| (child, level + 1)));
            }
        }
        deepest
    }

    #[test]
    fn nesting_is_bounded_and_deeper_nesting_becomes_text() {
        for (name, text) in hostile_corpus() {
            let nodes = parse(&text);
            assert!(depth(&nodes) <= MAX_DEPTH, "{name}: {}", depth(&nodes));
        }
        let nodes = parse(&format!("{}deep", "> ".repeat(2_000)));
        assert_eq!(depth(&nodes), MAX_DEPTH);
        assert!(format!("{nodes:?}").contains("Text(\"deep\")"));
        // A table that does not fit whole becomes its text.
        let quoted = |depth: usize| {
            let prefix = "> ".repeat(depth);
            format!("{prefix}| a |\n{prefix}|---|\n{prefix}| cell |")
        };
        assert!(format!("{:?}", parse(&quoted(MAX_DEPTH - 3))).contains("Table"));
        let nodes = parse(&quoted(MAX_DEPTH - 2));
        let text = format!("{nodes:?}");
        assert!(!text.contains("Table"), "{text}");
        assert!(text.contains("Text(\"cell\")"), "{text}");
        // Shallow documents are untouched.
        let nodes = parse(&format!("{}deep", "> ".repeat(MAX_DEPTH - 4)));
        assert!(format!("{nodes:?}").matches("Quote").count() == MAX_DEPTH - 4);
    }

    /// Every hostile document parses, renders to HTML and is dropped on a thread whose stack is
    /// half a server worker's (2 MiB), in a debug build: nothing recurses per level of input
    /// beyond [`MAX_DEPTH`]. Without the bound, `quotes` alone overflows it.
    #[cfg(feature = "ssr")]
    #[test]
    fn hostile_markdown_renders_on_a_small_stack() {
        std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                for (name, text) in hostile_corpus() {
                    let out = html(&text);
                    let shown = out.contains("deep") || out.contains("ddd") || name == "stars";
                    assert!(shown, "{name}: the text is shown");
                }
            })
            .expect("thread")
            .join()
            .expect("rendered on a small stack");
    }
}
