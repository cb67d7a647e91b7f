//! A JSON text parser as tolerant as fastjson's default parser: standard
//! JSON, plus single-quoted strings, unquoted object keys (`{0:"a"}`,
//! `{brokerName:"b"}`), object keys (fastjson writes a map keyed by a
//! `MessageQueue` as `{{"brokerName":"b","queueId":0,"topic":"T"}:1}`; the
//! key becomes its compact JSON text), trailing and repeated commas, Java number suffixes
//! (`1L`, `2.5F`), `\x41` escapes, and invalid UTF-8 read with replacement
//! characters (as Java decodes bytes). Nesting is capped at
//! [`MAX_DEPTH`] so hostile input cannot exhaust the stack.

use serde_json::{Map, Number, Value};

use super::JsonError;

/// Deepest nesting of arrays and objects accepted (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// Parses one JSON value; only whitespace may follow it.
pub fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    let text = String::from_utf8_lossy(bytes);
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.skip_ws();
    if p.pos < p.s.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> JsonError {
        JsonError::syntax(self.pos, what)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) = self.peek() {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Value, JsonError> {
        self.skip_ws();
        match self.peek() {
            None => Err(self.err("unexpected end of input, expected a value")),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(q @ (b'"' | b'\'')) => {
                self.pos += 1;
                Ok(Value::String(self.string(q)?))
            }
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                match self.bare_word() {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    "null" | "undefined" => Ok(Value::Null),
                    word => Err(JsonError::syntax(
                        start,
                        &format!("unexpected word `{word}`, expected a value"),
                    )),
                }
            }
            Some(c) => Err(self.err(&format!(
                "unexpected character {:?}, expected a value",
                char::from(c)
            ))),
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Value, JsonError>) -> Result<Value, JsonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(&format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        self.pos += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    /// After the `{`.
    fn object(&mut self) -> Result<Value, JsonError> {
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                None => return Err(self.err("unexpected end of input inside an object")),
                _ => {}
            }
            let key = self.key()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err(&format!("expected `:` after key {key:?}")));
            }
            self.pos += 1;
            let value = self.value()?;
            map.insert(key, value);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                None => return Err(self.err("unexpected end of input inside an object")),
                Some(c) => {
                    return Err(self.err(&format!(
                        "expected `,` or `}}` in an object, found {:?}",
                        char::from(c)
                    )))
                }
            }
        }
    }

    fn key(&mut self) -> Result<String, JsonError> {
        match self.peek() {
            Some(q @ (b'"' | b'\'')) => {
                self.pos += 1;
                self.string(q)
            }
            Some(c) if is_bare(c) => Ok(self.bare_word().to_owned()),
            Some(b'{' | b'[') => Ok(self.value()?.to_string()),
            Some(c) => Err(self.err(&format!(
                "expected an object key, found {:?}",
                char::from(c)
            ))),
            None => Err(self.err("unexpected end of input, expected an object key")),
        }
    }

    /// After the `[`.
    fn array(&mut self) -> Result<Value, JsonError> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                None => return Err(self.err("unexpected end of input inside an array")),
                _ => {}
            }
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                None => return Err(self.err("unexpected end of input inside an array")),
                Some(c) => {
                    return Err(self.err(&format!(
                        "expected `,` or `]` in an array, found {:?}",
                        char::from(c)
                    )))
                }
            }
        }
    }

    fn bare_word(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_bare) {
            self.pos += 1;
        }
        // Only ASCII bytes were taken, so this is a char boundary.
        std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default()
    }

    /// After the opening quote `q`.
    fn string(&mut self, q: u8) -> Result<String, JsonError> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unexpected end of input inside a string"));
            };
            self.pos += 1;
            match c {
                _ if c == q => break,
                b'\\' => self.escape(&mut out)?,
                _ => out.push(c),
            }
        }
        // The input is valid UTF-8 and escapes push whole characters.
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in a string"))
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), JsonError> {
        let Some(c) = self.peek() else {
            return Err(self.err("unexpected end of input in an escape"));
        };
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\'' => '\'',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'0' => '\0',
            b'x' => char::from(u8::try_from(self.hex(2)?).unwrap_or(b'?')),
            b'u' => {
                let first = self.hex(4)?;
                let code = if (0xD800..0xDC00).contains(&first)
                    && self.s.get(self.pos..self.pos + 2) == Some(b"\\u")
                {
                    self.pos += 2;
                    let second = self.hex(4)?;
                    0x10000 + ((first - 0xD800) << 10) + (second.wrapping_sub(0xDC00) & 0x3FF)
                } else {
                    first
                };
                char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            other => {
                return Err(JsonError::syntax(
                    self.pos - 1,
                    &format!("unknown escape `\\{}`", char::from(other)),
                ))
            }
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn hex(&mut self, digits: usize) -> Result<u32, JsonError> {
        let text = self
            .s
            .get(self.pos..self.pos + digits)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| self.err("escape cut short"))?;
        let v = u32::from_str_radix(text, 16)
            .map_err(|_| self.err(&format!("`{text}` is not {digits} hex digits")))?;
        self.pos += digits;
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.peek() {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default();
        // Java literal suffixes that fastjson writes with WriteClassName.
        if let Some(b'L' | b'l' | b'S' | b'B' | b'F' | b'f' | b'D' | b'd') = self.peek() {
            self.pos += 1;
        }
        number_value(text)
            .ok_or_else(|| JsonError::syntax(start, &format!("`{text}` is not a number")))
    }
}

/// A number's value: an integer when it is one and fits 64 bits, else a float.
pub(crate) fn number_value(text: &str) -> Option<Value> {
    let t = text.strip_prefix('+').unwrap_or(text);
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    if let Ok(u) = t.parse::<u64>() {
        return Some(Value::Number(u.into()));
    }
    let f: f64 = t.parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// Characters of an unquoted key or word.
fn is_bare(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-' | b'.' | b'%' | b'@' | b'|')
}
