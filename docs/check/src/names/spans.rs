//! The names an inline-code span of the zkr column refers to: `ZkClient::builder(cs)` is the
//! path `ZkClient::builder`, `zk.create_node(p).data(d)` the client's method `create_node`
//! and the method `data`, `Created { path, stat }` the type `Created` with its fields,
//! `compression::{compress, decompress}` two items of a module. Arguments that are plain
//! lowercase names (`p`, `data`), closure parameters, literals, keywords and `.await` are
//! not names.

/// A token of a span.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Punct(&'static str),
    /// A literal, or a character the check ignores.
    Other,
}

/// A name a span refers to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reference {
    /// A lone name: an item (`SegmentIdGenerator`), a variant (`Sticky`) or a method
    /// (`create_if_absent`).
    Name(String),
    /// `.name` called on `zk` (a `ZkClient`), or on something else.
    Method { on_zk: bool, name: String },
    /// `a::b::C`.
    Path(Vec<String>),
    /// `Type { field, .. }`.
    Fields { path: Vec<String>, fields: Vec<String> },
    /// `module::{a, b}`.
    Group { path: Vec<String>, names: Vec<String> },
}

const KEYWORDS: [&str; 22] = [
    "let", "mut", "async", "move", "await", "fn", "impl", "dyn", "as", "for", "in", "if", "else", "match",
    "return", "self", "Self", "true", "false", "crate", "super", "where",
];

const PUNCTS: [&str; 19] =
    ["::", "..", "->", "=>", ".", ",", ";", "(", ")", "[", "]", "{", "}", "<", ">", "|", "&", "?", "!"];

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '"' || ((c == 'b' || c == 'r') && chars.get(i + 1) == Some(&'"')) {
            // A string literal (b"", r"").
            i += if c == '"' { 1 } else { 2 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            tokens.push(Token::Other);
        } else if c == '\'' {
            // A char literal ('/') or a lifetime ('a).
            i += if chars.get(i + 2) == Some(&'\'') { 3 } else { 1 };
            tokens.push(Token::Other);
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Other);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                Some(p) => {
                    i += p.len();
                    tokens.push(Token::Punct(p));
                }
                None => {
                    i += 1;
                    tokens.push(Token::Other);
                }
            }
        }
    }
    tokens
}

fn is_punct(token: Option<&Token>, punct: &str) -> bool {
    matches!(token, Some(Token::Punct(p)) if *p == punct)
}

fn capitalized(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The index after the bracket that closes the one at `open` (`<`/`>` or `{`/`}`).
fn after_closing(tokens: &[Token], open: usize, (left, right): (&str, &str)) -> usize {
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if is_punct(Some(token), left) {
            depth += 1;
        } else if is_punct(Some(token), right) {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    tokens.len()
}

/// The first identifier of each comma-separated entry between `open` (a `{`) and its `}`:
/// a struct pattern's fields, a `use` group's names (`..` left out).
fn entries(tokens: &[Token], open: usize) -> (Vec<String>, usize) {
    let end = after_closing(tokens, open, ("{", "}"));
    let mut names = Vec::new();
    let mut expect = true;
    for token in &tokens[open + 1..end.saturating_sub(1)] {
        match token {
            Token::Ident(name) if expect => {
                names.push(name.clone());
                expect = false;
            }
            Token::Punct(",") => expect = true,
            _ => {}
        }
    }
    (names, end)
}

/// The names `code` refers to.
pub(super) fn references(code: &str) -> Vec<Reference> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    let (mut i, mut depth, mut closure_params) = (0, 0usize, false);
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct("|") => {
                closure_params = !closure_params;
                i += 1;
            }
            Token::Ident(_) if closure_params => i += 1,
            Token::Punct(".") => {
                if let Some(Token::Ident(name)) = tokens.get(i + 1) {
                    if name != "await" {
                        let on_zk = i >= 1
                            && tokens[i - 1] == Token::Ident("zk".into())
                            && !(i >= 2
                                && (is_punct(tokens.get(i - 2), ".") || is_punct(tokens.get(i - 2), "::")));
                        found.push(Reference::Method { on_zk, name: name.clone() });
                    }
                    i += 1;
                }
                i += 1;
            }
            Token::Punct("(" | "[") => {
                depth += 1;
                i += 1;
            }
            Token::Punct(")" | "]") => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Token::Ident(first) => {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                let mut group = None;
                while is_punct(tokens.get(j), "::") {
                    match tokens.get(j + 1) {
                        Some(Token::Ident(name)) => {
                            path.push(name.clone());
                            j += 2;
                        }
                        // A turbofish: `ServiceDiscovery::<P>::new`.
                        Some(Token::Punct("<")) => j = after_closing(&tokens, j + 1, ("<", ">")),
                        Some(Token::Punct("{")) => {
                            let (names, end) = entries(&tokens, j + 1);
                            group = Some(names);
                            j = end;
                            break;
                        }
                        _ => break,
                    }
                }
                let next = tokens.get(j);
                if let Some(names) = group {
                    found.push(Reference::Group { path, names });
                } else if is_punct(next, "{") && capitalized(path.last().unwrap()) {
                    let (fields, end) = entries(&tokens, j);
                    found.push(Reference::Fields { path, fields });
                    j = end;
                } else if is_punct(next, "!") {
                    // A macro (`tokio::join!`): not zkr's.
                } else if path.len() > 1 {
                    found.push(Reference::Path(path));
                } else if KEYWORDS.contains(&first.as_str()) {
                } else if !capitalized(first) && (is_punct(next, ".") || (depth > 0 && !is_punct(next, "(")))
                {
                    // A receiver (`zk.`, `guard.`) or an argument (`p`, `data`).
                } else {
                    found.push(Reference::Name(first.clone()));
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Reference {
        Reference::Name(s.into())
    }

    fn path(s: &str) -> Reference {
        Reference::Path(s.split("::").map(String::from).collect())
    }

    fn method(on_zk: bool, name: &str) -> Reference {
        Reference::Method { on_zk, name: name.into() }
    }

    #[test]
    fn spans_give_their_names() {
        assert_eq!(
            references("zk.create_node(p).data(data).parents(Parents::Persistent).await?"),
            [
                method(true, "create_node"),
                method(false, "data"),
                method(false, "parents"),
                path("Parents::Persistent")
            ]
        );
        assert_eq!(references("ServiceDiscovery::<P>::new(&zk, p)?"), [path("ServiceDiscovery::new")]);
        assert_eq!(
            references("Created { path, stat, sequence }"),
            [Reference::Fields {
                path: vec!["Created".into()],
                fields: vec!["path".into(), "stat".into(), "sequence".into()]
            }]
        );
        assert_eq!(
            references("zkr_connection::compression::{compress, decompress}"),
            [Reference::Group {
                path: vec!["zkr_connection".into(), "compression".into()],
                names: vec!["compress".into(), "decompress".into()]
            }]
        );
        assert_eq!(references(".filter(|instance| ..)"), [method(false, "filter")]);
        assert_eq!(references("Option<(Vec<u8>, Stat)>"), [name("Option"), name("Vec"), name("Stat")]);
        assert_eq!(references("create_if_absent"), [name("create_if_absent")]);
        assert_eq!(
            references("zk.create_if_absent(p, b\"\", CreateMode::Container)"),
            [method(true, "create_if_absent"), path("CreateMode::Container")]
        );
        assert_eq!(references("p.split('/')"), [method(false, "split")]);
        assert!(references("%010d").is_empty());
    }
}
