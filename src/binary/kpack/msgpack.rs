//! The MessagePack subset kpack uses: a kernel pack's table of contents and a host binary's
//! `.rocm_kpack_ref` marker are MessagePack maps of strings, integers and arrays.
//!
//! Encoding follows msgpack-python's `packb(obj, use_bin_type=True)` (what rocm-kpack writes
//! with): every integer, string, array and map in its smallest form, map entries in insertion
//! order. So a value encoded here has the same bytes as the reference's encoding of the same
//! value. Decoding accepts every MessagePack form but extension types, with bounds a hostile
//! file cannot exceed (nesting depth, element counts against the bytes that remain).

/// A decoded MessagePack value. Maps keep their entries in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// Every integer the format holds fits in i128.
    Int(i128),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    pub fn str(text: &str) -> Value {
        Value::Str(text.to_string())
    }

    pub fn uint(n: u64) -> Value {
        Value::Int(i128::from(n))
    }

    /// A map with string keys, in the order given.
    pub fn map<'a>(entries: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Value::str(k), v))
                .collect(),
        )
    }

    /// The value at string key `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The MessagePack bytes of this value.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode_into(self, &mut out);
        out
    }
}

fn encode_len(out: &mut Vec<u8>, len: usize, fix: Option<(u8, usize)>, codes: [u8; 3]) {
    match fix {
        Some((base, limit)) if len < limit => out.push(base | len as u8),
        _ if codes[0] != 0 && len <= usize::from(u8::MAX) => {
            out.push(codes[0]);
            out.push(len as u8);
        }
        _ if len <= usize::from(u16::MAX) => {
            out.push(codes[1]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(codes[2]);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
}

fn encode_int(n: i128, out: &mut Vec<u8>) {
    if n >= 0 {
        if n < 0x80 {
            out.push(n as u8);
        } else if n <= i128::from(u8::MAX) {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= i128::from(u16::MAX) {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= i128::from(u32::MAX) {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= i128::from(i8::MIN) {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= i128::from(i16::MIN) {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i128::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&(n as i64).to_be_bytes());
    }
}

fn encode_into(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Nil => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Int(n) => encode_int(*n, out),
        Value::Float(f) => {
            out.push(0xcb);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::Str(s) => {
            encode_len(out, s.len(), Some((0xa0, 32)), [0xd9, 0xda, 0xdb]);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bin(b) => {
            encode_len(out, b.len(), None, [0xc4, 0xc5, 0xc6]);
            out.extend_from_slice(b);
        }
        Value::Array(items) => {
            encode_len(out, items.len(), Some((0x90, 16)), [0, 0xdc, 0xdd]);
            for item in items {
                encode_into(item, out);
            }
        }
        Value::Map(entries) => {
            encode_len(out, entries.len(), Some((0x80, 16)), [0, 0xde, 0xdf]);
            for (k, v) in entries {
                encode_into(k, out);
                encode_into(v, out);
            }
        }
    }
}

/// Why bytes are not the MessagePack value expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated at byte {0}")]
    Truncated(usize),
    #[error(
        "byte {at}: format 0x{code:02x} is not supported (extension types are not used by kpack)"
    )]
    Unsupported { at: usize, code: u8 },
    #[error("byte {0}: a string that is not UTF-8")]
    NotUtf8(usize),
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("byte {at}: {count} elements cannot fit in the {remain} bytes that remain")]
    TooMany {
        at: usize,
        count: usize,
        remain: usize,
    },
}

const MAX_DEPTH: usize = 64;

/// Decodes one value from the start of `data`; returns it and the bytes it took.
pub fn decode(data: &[u8]) -> Result<(Value, usize), DecodeError> {
    let mut reader = Reader { data, at: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.at))
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.data.len())
            .ok_or(DecodeError::Truncated(self.at))?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        let bytes = self.take(n)?;
        Ok(bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, DecodeError> {
        let len = self.uint(n)?;
        usize::try_from(len).map_err(|_| DecodeError::Truncated(self.at))
    }

    fn string(&mut self, len: usize) -> Result<Value, DecodeError> {
        let at = self.at;
        let bytes = self.take(len)?.to_vec();
        String::from_utf8(bytes)
            .map(Value::Str)
            .map_err(|_| DecodeError::NotUtf8(at))
    }

    /// Each element takes at least one byte: a count beyond what remains is a lie.
    fn check_count(&self, count: usize, per: usize) -> Result<(), DecodeError> {
        let remain = self.data.len() - self.at;
        if count.saturating_mul(per) > remain {
            return Err(DecodeError::TooMany {
                at: self.at,
                count,
                remain,
            });
        }
        Ok(())
    }

    fn array(&mut self, count: usize, depth: usize) -> Result<Value, DecodeError> {
        self.check_count(count, 1)?;
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, count: usize, depth: usize) -> Result<Value, DecodeError> {
        self.check_count(count, 2)?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }

    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        let at = self.at;
        let code = self.take(1)?[0];
        Ok(match code {
            0x00..=0x7f => Value::Int(i128::from(code)),
            0x80..=0x8f => self.map(usize::from(code & 0x0f), depth)?,
            0x90..=0x9f => self.array(usize::from(code & 0x0f), depth)?,
            0xa0..=0xbf => self.string(usize::from(code & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (code - 0xc4))?;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xca => Value::Float(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Value::Int(i128::from(self.uint(1 << (code - 0xcc))?)),
            0xd0..=0xd3 => {
                let width = 1usize << (code - 0xd0);
                let raw = self.uint(width)?;
                let shift = 64 - 8 * width as u32;
                Value::Int(i128::from(((raw << shift) as i64) >> shift))
            }
            0xd9..=0xdb => {
                let n = self.len(1 << (code - 0xd9))?;
                self.string(n)?
            }
            0xdc | 0xdd => {
                let n = self.len(2 << (code - 0xdc))?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.len(2 << (code - 0xde))?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(i128::from(code as i8)),
            other => return Err(DecodeError::Unsupported { at, code: other }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_in_the_smallest_forms_msgpack_python_uses() {
        // Bytes msgpack-python 1.x writes for the same values (packb, use_bin_type=True).
        let cases: Vec<(Value, Vec<u8>)> = vec![
            (Value::uint(0), vec![0x00]),
            (Value::uint(127), vec![0x7f]),
            (Value::uint(128), vec![0xcc, 0x80]),
            (Value::uint(256), vec![0xcd, 0x01, 0x00]),
            (Value::uint(65536), vec![0xce, 0x00, 0x01, 0x00, 0x00]),
            (Value::uint(1 << 32), vec![0xcf, 0, 0, 0, 1, 0, 0, 0, 0]),
            (Value::Int(-1), vec![0xff]),
            (Value::Int(-33), vec![0xd0, 0xdf]),
            (Value::Int(-129), vec![0xd1, 0xff, 0x7f]),
            (Value::str("hsaco"), b"\xa5hsaco".to_vec()),
            (Value::Nil, vec![0xc0]),
            (Value::Bool(true), vec![0xc3]),
            (Value::Bin(vec![1, 2]), vec![0xc4, 2, 1, 2]),
        ];
        for (value, bytes) in cases {
            assert_eq!(value.encode(), bytes, "{value:?}");
            assert_eq!(decode(&bytes), Ok((value, bytes.len())));
        }
        let long = "x".repeat(40);
        let encoded = Value::str(&long).encode();
        assert_eq!(&encoded[..2], &[0xd9, 40]);
        let array = Value::Array((0..20).map(Value::uint).collect());
        assert_eq!(&array.encode()[..3], &[0xdc, 0, 20]);
        let marker = Value::map([
            (
                "kpack_search_paths",
                Value::Array(vec![Value::str("../.kpack/torch_@GFXARCH@.kpack")]),
            ),
            ("kernel_name", Value::str("lib/libtorch_hip.so")),
        ]);
        let bytes = marker.encode();
        assert_eq!(bytes[0], 0x82);
        assert_eq!(decode(&bytes), Ok((marker.clone(), bytes.len())));
        assert_eq!(
            marker.get("kernel_name").and_then(Value::as_str),
            Some("lib/libtorch_hip.so")
        );
    }

    #[test]
    fn refuses_hostile_bytes() {
        assert_eq!(decode(&[0xdc, 0xff]), Err(DecodeError::Truncated(1)));
        assert!(matches!(
            decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]),
            Err(DecodeError::TooMany { .. })
        ));
        assert!(matches!(
            decode(&[0xc7, 1, 1, 0]),
            Err(DecodeError::Unsupported { code: 0xc7, .. })
        ));
        assert_eq!(decode(&[0xa2, 0xff, 0xfe]), Err(DecodeError::NotUtf8(1)));
        let deep = vec![0x91; 100];
        assert_eq!(decode(&deep), Err(DecodeError::TooDeep));
    }
}
