//! Preprocessor conditions evaluated for "a ROCm build", in three-valued logic: a condition is
//! on, off, or undecided (it depends on something rockbuild cannot know: a macro's value, a
//! function-like macro, `__has_include`). Only "off" lets the check skip a branch, so anything
//! this evaluator does not understand errs towards reporting.

/// The truth of a branch on ROCm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tri {
    Off,
    On,
    Undecided,
}

impl Tri {
    pub fn not(self) -> Tri {
        match self {
            Tri::Off => Tri::On,
            Tri::On => Tri::Off,
            Tri::Undecided => Tri::Undecided,
        }
    }

    pub fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::Off, _) | (_, Tri::Off) => Tri::Off,
            (Tri::On, Tri::On) => Tri::On,
            _ => Tri::Undecided,
        }
    }

    pub fn or(self, other: Tri) -> Tri {
        self.not().and(other.not()).not()
    }
}

/// What is known about one macro at some point of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Macro {
    Defined,
    Undefined,
    Unknown,
}

impl Macro {
    pub fn is_defined(self) -> Tri {
        match self {
            Macro::Defined => Tri::On,
            Macro::Undefined => Tri::Off,
            Macro::Unknown => Tri::Undecided,
        }
    }
}

/// Evaluates an `#if`/`#elif` expression; `lookup` says what is known about a macro.
pub fn eval(expression: &str, lookup: &dyn Fn(&str) -> Macro) -> Tri {
    let tokens = tokenize(expression);
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        lookup,
    };
    match parser.ternary() {
        Some(value) if parser.at == tokens.len() => value.truth(),
        _ => Tri::Undecided,
    }
}

/// An integer the preprocessor computes, or one that depends on what rockbuild cannot know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Known(i64),
    Unknown,
}

impl Value {
    fn truth(self) -> Tri {
        match self {
            Value::Known(0) => Tri::Off,
            Value::Known(_) => Tri::On,
            Value::Unknown => Tri::Undecided,
        }
    }

    fn from_truth(truth: Tri) -> Value {
        match truth {
            Tri::Off => Value::Known(0),
            Tri::On => Value::Known(1),
            Tri::Undecided => Value::Unknown,
        }
    }

    fn map2(self, other: Value, op: impl Fn(i64, i64) -> Option<i64>) -> Value {
        match (self, other) {
            (Value::Known(a), Value::Known(b)) => op(a, b).map_or(Value::Unknown, Value::Known),
            _ => Value::Unknown,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Number(i64),
    /// A literal the evaluator does not compute (character literals, odd numbers).
    Opaque,
    Punct(&'static str),
}

const PUNCTUATION: &[&str] = &[
    "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "(", ")", "!", "~", "+", "-", "*", "/", "%",
    "<", ">", "&", "^", "|", "?", ":", ",",
];

fn tokenize(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(Token::Ident(text[start..i].to_string()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'\'') {
                i += 1;
            }
            tokens.push(number(&text[start..i]).map_or(Token::Opaque, Token::Number));
        } else if c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            tokens.push(Token::Opaque);
        } else if let Some(punct) = PUNCTUATION.iter().find(|p| text[i..].starts_with(**p)) {
            i += punct.len();
            tokens.push(Token::Punct(punct));
        } else {
            // `.` in `__has_include(<cuda.h>)`, a string: nothing this evaluator computes.
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            tokens.push(Token::Opaque);
        }
    }
    tokens
}

/// A C integer literal (decimal, hex, octal, binary; suffixes and digit separators allowed).
fn number(literal: &str) -> Option<i64> {
    let digits: String = literal.chars().filter(|c| *c != '\'').collect();
    let digits = digits.trim_end_matches(['u', 'U', 'l', 'L']);
    let (radix, body) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if let Some(binary) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, binary)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    i64::from_str_radix(body, radix).ok()
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    lookup: &'a dyn Fn(&str) -> Macro,
}

/// Binary operators by precedence, loosest first (C's table; `?:` is handled above them).
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser<'_> {
    fn peek_punct(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Punct(p)) => Some(p),
            _ => None,
        }
    }

    fn eat(&mut self, punct: &str) -> bool {
        if self.peek_punct() == Some(punct) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn ternary(&mut self) -> Option<Value> {
        let condition = self.binary(0)?;
        if !self.eat("?") {
            return Some(condition);
        }
        let then = self.ternary()?;
        if !self.eat(":") {
            return None;
        }
        let otherwise = self.ternary()?;
        Some(match condition.truth() {
            Tri::On => then,
            Tri::Off => otherwise,
            Tri::Undecided if then == otherwise => then,
            Tri::Undecided => Value::Unknown,
        })
    }

    fn binary(&mut self, level: usize) -> Option<Value> {
        let Some(operators) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut left = self.binary(level + 1)?;
        while let Some(op) = self.peek_punct().filter(|p| operators.contains(p)) {
            self.at += 1;
            let right = self.binary(level + 1)?;
            left = apply(op, left, right);
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Value> {
        if self.eat("!") {
            return Some(Value::from_truth(self.unary()?.truth().not()));
        }
        if self.eat("-") {
            return Some(self.unary()?.map2(Value::Known(0), |a, _| a.checked_neg()));
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("~") {
            return Some(self.unary()?.map2(Value::Known(0), |a, _| Some(!a)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Value> {
        let token = self.tokens.get(self.at)?.clone();
        self.at += 1;
        match token {
            Token::Number(n) => Some(Value::Known(n)),
            Token::Opaque => Some(Value::Unknown),
            Token::Punct("(") => {
                let value = self.ternary()?;
                self.eat(")").then_some(value)
            }
            Token::Punct(_) => None,
            Token::Ident(name) if name == "defined" => {
                let parenthesised = self.eat("(");
                let Some(Token::Ident(name)) = self.tokens.get(self.at).cloned() else {
                    return None;
                };
                self.at += 1;
                if parenthesised && !self.eat(")") {
                    return None;
                }
                Some(Value::from_truth((self.lookup)(&name).is_defined()))
            }
            Token::Ident(name) => {
                if self.peek_punct() == Some("(") {
                    // A function-like macro or __has_include(...): its value is not ours to know.
                    self.skip_parenthesised()?;
                    return Some(Value::Unknown);
                }
                Some(match (name.as_str(), (self.lookup)(&name)) {
                    ("true", _) => Value::Known(1),
                    ("false", _) => Value::Known(0),
                    // An undefined identifier is 0 in #if (C11 6.10.1p4).
                    (_, Macro::Undefined) => Value::Known(0),
                    // Defined, but with which value? Only the build knows.
                    _ => Value::Unknown,
                })
            }
        }
    }

    fn skip_parenthesised(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.tokens.get(self.at)? {
                Token::Punct("(") => depth += 1,
                Token::Punct(")") => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }
}

fn apply(op: &str, left: Value, right: Value) -> Value {
    let flag = |b: bool| Some(i64::from(b));
    match op {
        "&&" => Value::from_truth(left.truth().and(right.truth())),
        "||" => Value::from_truth(left.truth().or(right.truth())),
        "|" => left.map2(right, |a, b| Some(a | b)),
        "^" => left.map2(right, |a, b| Some(a ^ b)),
        "&" => left.map2(right, |a, b| Some(a & b)),
        "==" => left.map2(right, |a, b| flag(a == b)),
        "!=" => left.map2(right, |a, b| flag(a != b)),
        "<" => left.map2(right, |a, b| flag(a < b)),
        ">" => left.map2(right, |a, b| flag(a > b)),
        "<=" => left.map2(right, |a, b| flag(a <= b)),
        ">=" => left.map2(right, |a, b| flag(a >= b)),
        "<<" => left.map2(right, |a, b| {
            u32::try_from(b).ok().and_then(|b| a.checked_shl(b))
        }),
        ">>" => left.map2(right, |a, b| {
            u32::try_from(b).ok().and_then(|b| a.checked_shr(b))
        }),
        "+" => left.map2(right, i64::checked_add),
        "-" => left.map2(right, i64::checked_sub),
        "*" => left.map2(right, i64::checked_mul),
        "/" => left.map2(right, i64::checked_div),
        "%" => left.map2(right, i64::checked_rem),
        _ => Value::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// USE_ROCM defined, CUDA_VERSION / __CUDA_ARCH__ / CUDNN_VERSION undefined, the rest unknown.
    fn rocm(name: &str) -> Macro {
        match name {
            "USE_ROCM" | "__HIP_PLATFORM_AMD__" => Macro::Defined,
            "CUDA_VERSION" | "__CUDA_ARCH__" | "CUDNN_VERSION" | "__CUDACC__" => Macro::Undefined,
            _ => Macro::Unknown,
        }
    }

    fn on_rocm(expression: &str) -> Tri {
        eval(expression, &rocm)
    }

    #[test]
    fn conditions_from_pytorch_2_6() {
        for (expression, expected, file) in [
            (
                "defined(USE_ROCM) || !AT_CUDNN_ENABLED() ||     (defined(CUDNN_VERSION) && CUDNN_VERSION < 8900)",
                Tri::On,
                "aten/src/ATen/native/cudnn/MHA.cpp:5",
            ),
            (
                "defined(USE_ROCM) || defined(_MSC_VER) || (defined(CUDA_VERSION) && CUDA_VERSION < 11080)",
                Tri::On,
                "aten/src/ATen/native/cuda/MixedDtypesLinear.cu",
            ),
            (
                "!(defined(USE_ROCM) || ((defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800))))",
                Tri::Off,
                "aten/src/ATen/cuda/Atomic.cuh",
            ),
            (
                "(defined(USE_ROCM) && ROCM_VERSION >= 50700) || ((defined(CUDA_VERSION) && CUDA_VERSION >= 12000) && (!defined(__CUDA_ARCH__) || (__CUDA_ARCH__ >= 800)))",
                Tri::Undecided,
                "aten/src/ATen/native/cuda/int4mm.cu",
            ),
            (
                "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
                Tri::Off,
                "aten/src/ATen/native/transformers/cuda/flash_attn/utils.h",
            ),
            (
                "defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)",
                Tri::Undecided,
                "aten/src/ATen/cuda/detail/IntegerDivider.cuh",
            ),
            (
                "defined(__CUDACC__) && !defined(USE_ROCM)",
                Tri::Off,
                "c10/util/BFloat16.h",
            ),
            (
                "!defined(USE_ROCM)",
                Tri::Off,
                "aten/src/ATen/cuda/cub_definitions.cuh",
            ),
        ] {
            assert_eq!(on_rocm(expression), expected, "{file}: #if {expression}");
        }
    }

    #[test]
    fn arithmetic_literals_and_the_ternary() {
        for (expression, expected) in [
            ("0", Tri::Off),
            ("1", Tri::On),
            (
                "0x10 == 16 && 010 == 8 && 0b11 == 3 && 1'000 == 1000 && 12000UL > 11080",
                Tri::On,
            ),
            ("CUDA_VERSION", Tri::Off),
            ("CUDA_VERSION + 1 == 1", Tri::On),
            (
                "-1 < 0 && ~0 == -1 && 7 % 4 == 3 && 1 << 4 == 16 && (6 ^ 3) == 5",
                Tri::On,
            ),
            ("defined USE_ROCM ? 1 : 0", Tri::On),
            ("SOMETHING ? 1 : 1", Tri::On),
            ("SOMETHING ? 1 : 0", Tri::Undecided),
            ("USE_ROCM", Tri::Undecided),
            ("__has_include(<cuda.h>)", Tri::Undecided),
            ("__has_include(<cuda.h>) && defined(__CUDACC__)", Tri::Off),
            ("1 / 0", Tri::Undecided),
            ("'a' == 97", Tri::Undecided),
            ("true && !false", Tri::On),
        ] {
            assert_eq!(on_rocm(expression), expected, "#if {expression}");
        }
    }

    #[test]
    fn what_it_cannot_parse_is_undecided() {
        for expression in [
            "",
            "(1",
            "defined(",
            "defined()",
            "1 +",
            "1 ? 2",
            "@",
            "a b",
        ] {
            assert_eq!(on_rocm(expression), Tri::Undecided, "#if {expression}");
        }
    }
}
