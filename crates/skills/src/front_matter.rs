//! The `SKILL.md` front matter: `name` and `description` between `---`
//! lines, read by a small parser of its own (no YAML dependency).
//!
//! Understood, for these two keys only: a plain, `'single'` or `"double"`
//! quoted value on the key's line; a plain value continued on indented
//! lines (folded with spaces); a block value (`|`, `>`, with an optional
//! `-`/`+`) on the indented lines that follow. Other keys, and lines
//! indented under them, are skipped.

use crate::error::{SkillError, shown};

/// The longest name.
pub const MAX_NAME_CHARS: usize = 64;
/// The longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// What the front matter says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub name: String,
    pub description: String,
}

fn bad(reason: impl Into<String>) -> SkillError {
    SkillError::FrontMatter {
        reason: reason.into(),
    }
}

/// Reads and validates the front matter of a `SKILL.md` text.
pub(crate) fn parse(text: &str) -> Result<FrontMatter, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().map(|l| l.trim_end_matches([' ', '\t', '\r']));
    if lines.next() != Some("---") {
        return Err(bad("SKILL.md does not start with a `---` line"));
    }
    let mut block = Vec::new();
    let mut closed = false;
    for line in lines {
        if line == "---" {
            closed = true;
            break;
        }
        block.push(line);
    }
    if !closed {
        return Err(bad("no closing `---` line"));
    }
    let mut name = None;
    let mut description = None;
    let mut i = 0;
    while i < block.len() {
        let line = block[i];
        i += 1;
        let Some((key, rest)) = top_level_key(line) else {
            continue;
        };
        let slot = match key {
            "name" => &mut name,
            "description" => &mut description,
            _ => continue,
        };
        if slot.is_some() {
            return Err(bad(format!("`{key}` is given twice")));
        }
        let continuation = indented_run(&block[i..]);
        i += continuation.len();
        *slot = Some(value(key, rest, continuation)?);
    }
    let name = name.ok_or_else(|| bad("no `name`"))?;
    let description = description.ok_or_else(|| bad("no `description`"))?;
    validate_name(&name)?;
    validate_description(&description)?;
    Ok(FrontMatter { name, description })
}

/// `key: rest` for a line that starts a top-level mapping entry.
fn top_level_key(line: &str) -> Option<(&str, &str)> {
    if line.starts_with([' ', '\t', '#']) {
        return None;
    }
    let (key, rest) = line.split_once(':')?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key.trim(), rest.trim()))
}

/// The lines after a key that belong to its value: indented or blank.
fn indented_run<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let mut run: Vec<&str> = lines
        .iter()
        .take_while(|l| l.is_empty() || l.starts_with([' ', '\t']))
        .copied()
        .collect();
    while run.last().is_some_and(|l| l.is_empty()) {
        run.pop();
    }
    run
}

/// The value of `key`, from the rest of its line and its indented lines.
fn value(key: &str, rest: &str, more: Vec<&str>) -> Result<String, SkillError> {
    let more: Vec<&str> = more.into_iter().map(str::trim).collect();
    if rest.starts_with(['"', '\'']) {
        // A quoted value may go on over the next lines, folded.
        let mut lines = vec![rest];
        lines.extend(&more);
        let text = fold(&lines);
        return match (text.strip_prefix('"'), text.strip_prefix('\'')) {
            (Some(quoted), _) => double_quoted(key, quoted),
            (None, Some(quoted)) => single_quoted(key, quoted),
            (None, None) => Err(bad(format!("`{key}`: unreadable quoted value"))),
        };
    }
    if let Some(indicator) = rest.strip_prefix(['|', '>'])
        && matches!(indicator, "" | "-" | "+")
    {
        let literal = rest.starts_with('|');
        let joined = if literal {
            more.join("\n")
        } else {
            fold(&more)
        };
        return Ok(joined.trim().to_owned());
    }
    let first = strip_comment(rest);
    let mut parts = vec![first];
    parts.extend(more);
    Ok(fold(&parts).trim().to_owned())
}

/// Plain lines folded YAML's way: one space between lines, a blank line a
/// line break.
fn fold(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut pending_break = false;
    for line in lines {
        if line.is_empty() {
            out.push('\n');
            pending_break = true;
            continue;
        }
        if !out.is_empty() && !pending_break {
            out.push(' ');
        }
        out.push_str(line);
        pending_break = false;
    }
    out
}

fn strip_comment(plain: &str) -> &str {
    match plain.find(" #") {
        Some(at) => plain[..at].trim_end(),
        None if plain.starts_with('#') => "",
        None => plain,
    }
}

fn double_quoted(key: &str, body: &str) -> Result<String, SkillError> {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return trailing_ok(key, chars.as_str()).map(|()| out),
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other @ ('"' | '\\' | '/')) => out.push(other),
                _ => return Err(bad(format!("`{key}`: unsupported escape"))),
            },
            c => out.push(c),
        }
    }
    Err(bad(format!("`{key}`: unterminated quoted value")))
}

fn single_quoted(key: &str, body: &str) -> Result<String, SkillError> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let rest: String = chars.collect();
            return trailing_ok(key, &rest).map(|()| out);
        }
        out.push(c);
    }
    Err(bad(format!("`{key}`: unterminated quoted value")))
}

/// After a closing quote: nothing, or a comment.
fn trailing_ok(key: &str, rest: &str) -> Result<(), SkillError> {
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(bad(format!("`{key}`: text after the closing quote")))
    }
}

/// The naming rule: lowercase ASCII letters, digits and hyphens, 1 to 64
/// characters, no hyphen first, last or twice in a row.
pub fn validate_name(name: &str) -> Result<(), SkillError> {
    let fail = |reason| {
        Err(SkillError::InvalidName {
            name: shown(name),
            reason,
        })
    };
    if name.is_empty() {
        return fail("empty");
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return fail("longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return fail("only lowercase letters, digits and hyphens are allowed");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return fail("starts or ends with a hyphen");
    }
    if name.contains("--") {
        return fail("two hyphens in a row");
    }
    Ok(())
}

fn validate_description(description: &str) -> Result<(), SkillError> {
    if description.trim().is_empty() {
        return Err(SkillError::InvalidDescription { reason: "empty" });
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::InvalidDescription {
            reason: "longer than 1024 characters",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Result<FrontMatter, SkillError> {
        parse(text)
    }

    #[test]
    fn plain_and_quoted_values() {
        let got =
            fm("---\nname: pdf-tools\ndescription: Read PDFs. # note\nlicense: MIT\n---\n# Body\n")
                .unwrap();
        assert_eq!(got.name, "pdf-tools");
        assert_eq!(got.description, "Read PDFs.");
        let got =
            fm("\u{feff}---\r\nname: \"a1\"\r\ndescription: 'it''s: \"fine\"'\r\n---\r\n").unwrap();
        assert_eq!(got.name, "a1");
        assert_eq!(got.description, "it's: \"fine\"");
        let got = fm("---\nname: x\ndescription: \"tab\\there\"\n---\n").unwrap();
        assert_eq!(got.description, "tab\there");
    }

    #[test]
    fn multi_line_values() {
        let got = fm("---\nname: x\ndescription: >-\n  one\n  two\n\n  three\nmetadata:\n  name: nested\n---\n").unwrap();
        assert_eq!(got.description, "one two\nthree");
        assert_eq!(
            got.name, "x",
            "an indented `name:` under another key is not the name"
        );
        let got = fm("---\nname: x\ndescription: |\n  one\n  two\n---\n").unwrap();
        assert_eq!(got.description, "one\ntwo");
        let got = fm("---\nname: x\ndescription: starts here\n  and goes on\n---\n").unwrap();
        assert_eq!(got.description, "starts here and goes on");
        let got = fm("---\nname: x\ndescription: \"quoted, and\n  it goes on\"\n---\n").unwrap();
        assert_eq!(got.description, "quoted, and it goes on");
    }

    #[test]
    fn malformed_front_matter_is_refused() {
        for text in [
            "",
            "name: x\ndescription: y\n",
            "---\nname: x\ndescription: y\n",
            "---\nname: x\n---\n",
            "---\ndescription: y\n---\n",
            "---\nname: x\nname: y\ndescription: z\n---\n",
            "---\nname: \"x\ndescription: z\n---\n",
            "---\nname: 'x' y\ndescription: z\n---\n",
        ] {
            assert!(
                matches!(fm(text), Err(SkillError::FrontMatter { .. })),
                "{text:?}: {:?}",
                fm(text)
            );
        }
    }

    #[test]
    fn names_follow_the_rule() {
        for ok in ["a", "pdf", "pdf-tools-2", &"a".repeat(64)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "Pdf",
            "pdf_tools",
            "pdf tools",
            "é",
            "../x",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(validate_name(bad), Err(SkillError::InvalidName { .. })),
                "{bad}"
            );
        }
        let text = "---\nname: Bad_Name\ndescription: d\n---\n";
        assert!(matches!(fm(text), Err(SkillError::InvalidName { .. })));
    }

    #[test]
    fn descriptions_are_bounded() {
        let empty = "---\nname: x\ndescription: \"  \"\n---\n";
        assert!(matches!(
            fm(empty),
            Err(SkillError::InvalidDescription { .. })
        ));
        let long = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1025));
        assert!(matches!(
            fm(&long),
            Err(SkillError::InvalidDescription { .. })
        ));
        let max = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1024));
        assert!(fm(&max).is_ok());
    }
}
