//! Documents parsed strictly. serde takes the last of two equal keys of a map silently (a
//! second `torch:` block in a stack config, a second `"torch"` in a lock), and YAML aliases
//! let a small file expand without bound. Every JSON and YAML input is walked once before its
//! typed parse: a key repeated in any mapping is an error at the line of its second
//! occurrence, and the walk stops after [`MAX_VALUES`] values, aliases expanded.

use std::collections::HashSet;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Values (scalars, sequences, mappings) a document may hold once its aliases are expanded.
/// The largest config rockbuild ships holds a few thousand.
pub const MAX_VALUES: usize = 1 << 20;

/// `text` as JSON of type `T`, refusing duplicate keys.
pub fn json<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    check_json(text)?;
    serde_json::from_str(text)
}

/// `bytes` as JSON of type `T`, refusing duplicate keys.
pub fn json_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    Walk::new().deserialize(&mut deserializer)?;
    deserializer.end()?;
    serde_json::from_slice(bytes)
}

/// Fails at the first duplicate key of the JSON document.
pub fn check_json(text: &str) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Walk::new().deserialize(&mut deserializer)?;
    deserializer.end()
}

/// serde_json's message without the ` at line L column C` it appends (callers print the
/// location their own way).
pub fn json_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) if error.line() > 0 => text[..index].to_string(),
        _ => text,
    }
}

/// `text` as YAML of type `T`, refusing duplicate keys and alias bombs.
pub fn yaml<T: DeserializeOwned>(text: &str) -> Result<T, yaml_serde::Error> {
    check_yaml(text)?;
    yaml_serde::from_str(text)
}

/// Fails at the first duplicate key of the YAML document, or once it has expanded to more
/// than [`MAX_VALUES`] values.
pub fn check_yaml(text: &str) -> Result<(), yaml_serde::Error> {
    Walk::new().deserialize(yaml_serde::Deserializer::from_str(text))
}

/// The walk over one document: what is left of its budget of values.
struct Walk {
    left: usize,
}

impl Walk {
    fn new() -> Self {
        Walk { left: MAX_VALUES }
    }

    fn deserialize<'de, D: de::Deserializer<'de>>(
        mut self,
        deserializer: D,
    ) -> Result<(), D::Error> {
        Value { walk: &mut self }.deserialize(deserializer)
    }
}

/// One value of the document.
struct Value<'a> {
    walk: &'a mut Walk,
}

impl Value<'_> {
    fn spend<E: de::Error>(&mut self) -> Result<(), E> {
        if self.walk.left == 0 {
            return Err(E::custom(format!(
                "more than {MAX_VALUES} values once aliases are expanded (an alias bomb, or not \
                 the file you meant)"
            )));
        }
        self.walk.left -= 1;
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(mut self, _: bool) -> Result<(), E> {
        self.spend()
    }

    fn visit_i64<E: de::Error>(mut self, _: i64) -> Result<(), E> {
        self.spend()
    }

    fn visit_u64<E: de::Error>(mut self, _: u64) -> Result<(), E> {
        self.spend()
    }

    fn visit_i128<E: de::Error>(mut self, _: i128) -> Result<(), E> {
        self.spend()
    }

    fn visit_u128<E: de::Error>(mut self, _: u128) -> Result<(), E> {
        self.spend()
    }

    fn visit_f64<E: de::Error>(mut self, _: f64) -> Result<(), E> {
        self.spend()
    }

    fn visit_str<E: de::Error>(mut self, _: &str) -> Result<(), E> {
        self.spend()
    }

    fn visit_bytes<E: de::Error>(mut self, _: &[u8]) -> Result<(), E> {
        self.spend()
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<(), E> {
        self.spend()
    }

    fn visit_none<E: de::Error>(mut self) -> Result<(), E> {
        self.spend()
    }

    fn visit_some<D: de::Deserializer<'de>>(mut self, deserializer: D) -> Result<(), D::Error> {
        self.spend()?;
        Value { walk: self.walk }.deserialize(deserializer)
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(
        mut self,
        deserializer: D,
    ) -> Result<(), D::Error> {
        self.spend()?;
        Value { walk: self.walk }.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.spend()?;
        while seq
            .next_element_seed(Value {
                walk: &mut *self.walk,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.spend()?;
        let mut seen = HashSet::new();
        while map
            .next_key_seed(Key {
                seen: &mut seen,
                walk: &mut *self.walk,
            })?
            .is_some()
        {
            map.next_value_seed(Value {
                walk: &mut *self.walk,
            })?;
        }
        Ok(())
    }

    /// A YAML tagged value (`!Tag value`).
    fn visit_enum<A: de::EnumAccess<'de>>(mut self, data: A) -> Result<(), A::Error> {
        use serde::de::VariantAccess as _;
        self.spend()?;
        let (de::IgnoredAny, variant) = data.variant()?;
        variant.newtype_variant_seed(Value { walk: self.walk })
    }
}

/// A mapping's key: refused when the mapping already has it. The error is raised while the key
/// is read, so the parser places it at the second occurrence.
struct Key<'a> {
    seen: &'a mut HashSet<String>,
    walk: &'a mut Walk,
}

impl Key<'_> {
    fn insert<E: de::Error>(self, key: String) -> Result<(), E> {
        if self.walk.left == 0 {
            return Err(E::custom(format!(
                "more than {MAX_VALUES} values once aliases are expanded"
            )));
        }
        self.walk.left -= 1;
        if self.seen.insert(key.clone()) {
            return Ok(());
        }
        Err(E::custom(format!(
            "duplicate key `{key}`: a second entry would silently replace the first; keep one"
        )))
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        self.insert(key.to_string())
    }

    fn visit_bool<E: de::Error>(self, key: bool) -> Result<(), E> {
        self.insert(key.to_string())
    }

    fn visit_i64<E: de::Error>(self, key: i64) -> Result<(), E> {
        self.insert(key.to_string())
    }

    fn visit_u64<E: de::Error>(self, key: u64) -> Result<(), E> {
        self.insert(key.to_string())
    }

    fn visit_f64<E: de::Error>(self, key: f64) -> Result<(), E> {
        self.insert(key.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.insert("null".to_string())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.insert("null".to_string())
    }

    // A sequence or mapping as a key (YAML allows it): walked, never equal to another.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Value { walk: self.walk }.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        Value { walk: self.walk }.visit_map(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_where_they_repeat() {
        let error = check_json("{\n  \"a\": 1,\n  \"b\": {\"x\": 1},\n  \"a\": 2\n}")
            .expect_err("duplicate");
        assert_eq!(error.line(), 4, "{error}");
        assert!(
            error.to_string().starts_with("duplicate key `a`"),
            "{error}"
        );
        check_json(r#"{"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]}"#)
            .expect("equal keys in different maps");

        let text = "projects:\n  torch:\n    origin: a\n  vision: {}\n  torch:\n    origin: b\n";
        let error = check_yaml(text).expect_err("duplicate");
        assert_eq!(error.location().map(|l| l.line()), Some(5), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("projects: duplicate key `torch`"),
            "{error}"
        );
        let nested = "a:\n  b: 1\n  b: 2\n";
        let error = check_yaml(nested).expect_err("nested duplicate");
        assert_eq!(error.location().map(|l| l.line()), Some(3), "{error}");
    }

    #[test]
    fn an_alias_bomb_is_stopped() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let previous = format!("*a{}", level - 1);
            let list = [previous.as_str(); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{list}]\n"));
        }
        let error = check_yaml(&text).expect_err("bomb");
        assert!(
            error
                .to_string()
                .contains("values once aliases are expanded")
                || error.to_string().contains("repetition limit"),
            "{error}"
        );
        check_yaml("base: &b {x: 1}\nuse: *b\n").expect("a modest alias");
    }
}
