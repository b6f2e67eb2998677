//! Just enough of C/C++ lexing to find preprocessor directives as the compiler sees them:
//! backslash-continued lines joined, comments removed (they are whitespace, and may hide a
//! commented-out `#include`), raw string literals skipped (PyTorch embeds whole CUDA sources in
//! `R"( … )"` strings for its JIT, and their `#include` lines are text, not directives).

/// One logical source line: `number` is the 1-based physical line it starts on; `code` is the
/// text with comments replaced by a space and raw-string contents by `""`.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub number: usize,
    pub code: String,
}

impl Line {
    /// The directive on this line, if it is one: (name, rest), e.g. ("ifdef", "USE_ROCM").
    pub fn directive(&self) -> Option<(&str, &str)> {
        let rest = self.code.trim_start().strip_prefix('#')?.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        Some((&rest[..end], rest[end..].trim()))
    }
}

enum State {
    Code,
    BlockComment,
    /// Inside `R"delim( … )delim"`; holds the closing `)delim"`.
    RawString(String),
}

/// Splits `text` into logical lines without comments.
pub fn logical_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut state = State::Code;
    let mut physical = text.split('\n').enumerate().peekable();
    while let Some((index, first)) = physical.next() {
        let mut joined = first.strip_suffix('\r').unwrap_or(first).to_string();
        while joined.ends_with('\\') && physical.peek().is_some() {
            joined.pop();
            if let Some((_, next)) = physical.next() {
                joined.push_str(next.strip_suffix('\r').unwrap_or(next));
            }
        }
        let code = strip(&joined, &mut state);
        lines.push(Line {
            number: index + 1,
            code,
        });
    }
    lines
}

/// Removes comments and raw-string contents from one logical line, carrying block comments and
/// raw strings over to the next line through `state`.
fn strip(line: &str, state: &mut State) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        match state {
            State::BlockComment => match rest.find("*/") {
                Some(end) => {
                    out.push(' ');
                    rest = &rest[end + 2..];
                    *state = State::Code;
                }
                None => {
                    out.push(' ');
                    rest = "";
                }
            },
            State::RawString(close) => {
                // A line that starts inside a raw string must not read as a directive.
                out.push_str("\"\"");
                match rest.find(close.as_str()) {
                    Some(end) => {
                        rest = &rest[end + close.len()..];
                        *state = State::Code;
                    }
                    None => rest = "",
                }
            }
            State::Code => rest = code_until_change(rest, &mut out, state),
        }
    }
    out
}

/// Copies code from `rest` into `out` until a comment or raw string starts (switching `state`)
/// or the line ends; returns what is left.
fn code_until_change<'a>(rest: &'a str, out: &mut String, state: &mut State) -> &'a str {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                out.push_str(&rest[..i]);
                out.push(' ');
                return "";
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                out.push_str(&rest[..i]);
                *state = State::BlockComment;
                return &rest[i + 2..];
            }
            b'"' if raw_string_prefix(&rest[..i]) => {
                if let Some(open) = rest[i + 1..].find('(') {
                    let delimiter = &rest[i + 1..i + 1 + open];
                    if delimiter.len() <= 16 && !delimiter.contains([' ', ')', '\\', '"']) {
                        out.push_str(&rest[..i]);
                        *state = State::RawString(format!("){delimiter}\""));
                        return &rest[i + 2 + open..];
                    }
                }
                i = skip_quoted(bytes, i, b'"');
            }
            b'"' => i = skip_quoted(bytes, i, b'"'),
            // A quote after a digit is a digit separator (1'000), not a character literal.
            b'\'' if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() => {
                i = skip_quoted(bytes, i, b'\'');
            }
            _ => i += 1,
        }
    }
    out.push_str(rest);
    ""
}

/// Whether the text before a `"` ends in a raw-string prefix: `R`, `u8R`, `uR`, `UR` or `LR`,
/// itself not the tail of a longer identifier.
fn raw_string_prefix(before: &str) -> bool {
    let word_start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    matches!(&before[word_start..], "R" | "u8R" | "uR" | "UR" | "LR")
}

/// The index just past the literal that opens at `start` (or the line's end if unterminated).
fn skip_quoted(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directives(text: &str) -> Vec<(usize, String)> {
        logical_lines(text)
            .into_iter()
            .filter_map(|line| {
                let (name, rest) = line.directive()?;
                Some((line.number, format!("{name} {rest}").trim().to_string()))
            })
            .collect()
    }

    #[test]
    fn continuations_join_and_keep_the_first_line_number() {
        // aten/src/ATen/native/cudnn/MHA.cpp (PyTorch 2.6.0) opens with a continued #if.
        let text = "#include <ATen/ATen.h>\n#if defined(USE_ROCM) || !AT_CUDNN_ENABLED() || \\\n    (defined(CUDNN_VERSION) && CUDNN_VERSION < 8900)\r\n#endif\n";
        assert_eq!(
            directives(text),
            [
                (1, "include <ATen/ATen.h>".to_string()),
                (
                    2,
                    "if defined(USE_ROCM) || !AT_CUDNN_ENABLED() ||     (defined(CUDNN_VERSION) && CUDNN_VERSION < 8900)".to_string()
                ),
                (4, "endif".to_string()),
            ]
        );
    }

    #[test]
    fn comments_are_whitespace_and_hide_what_they_contain() {
        let text = "#else // AT_CUDNN_ENABLED && defined(CUDNN_VERSION)\n/* old:\n#include <cuda.h>\n*/ #include <cuda_fp16.h>\n// #include <cudnn.h>\n  /* a */ # include \"x.h\" /* b */\nint s = \"/* not a comment\"; // c\n#define Q '\"'\n";
        assert_eq!(
            directives(text),
            [
                (1, "else".to_string()),
                (4, "include <cuda_fp16.h>".to_string()),
                (6, "include \"x.h\"".to_string()),
                (8, "define Q '\"'".to_string()),
            ]
        );
    }

    #[test]
    fn raw_strings_hide_their_lines() {
        // PyTorch keeps JIT kernel sources in raw strings, includes and all
        // (torch/csrc/jit/codegen/fuser/cpu/resource_strings.h, PyTorch 2.6.0:
        // `cpu_compilation_unit_template = at::jit::CodeTemplate(R"(` then `#include <math.h>`).
        let text = "static auto cpu_compilation_unit_template = at::jit::CodeTemplate(R\"(\n#include <cuda_fp16.h>\n${HalfHeader}\n)\");\n#include <cuda.h>\nauto x = u8R\"abc(\n#include <nvrtc.h>\n)abc\"; auto y = 1'000;\n";
        assert_eq!(directives(text), [(5, "include <cuda.h>".to_string())]);
    }
}
