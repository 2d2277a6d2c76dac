//! Field and method descriptors (JVMS 4.3).

/// The kind of a value as the JVM moves it: what load/store/return opcode family it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// boolean, byte, char, short, int.
    Int,
    /// long (two slots).
    Long,
    /// float.
    Float,
    /// double (two slots).
    Double,
    /// object or array reference.
    Reference,
}

impl Kind {
    /// Slots the value occupies in locals and on the stack.
    pub fn slots(self) -> u16 {
        match self {
            Kind::Long | Kind::Double => 2,
            _ => 1,
        }
    }
}

/// One parsed field type: its kind and, for references, the descriptor text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldType<'d> {
    /// The kind.
    pub kind: Kind,
    /// The descriptor of this type (`I`, `Ljava/lang/String;`, `[I`).
    pub descriptor: &'d str,
}

impl<'d> FieldType<'d> {
    /// The internal name to use in a CONSTANT_Class for this reference type
    /// (`java/lang/String`, or the descriptor itself for arrays).
    pub fn class_name(&self) -> Option<&'d str> {
        match self.kind {
            Kind::Reference if self.descriptor.starts_with('L') => {
                Some(&self.descriptor[1..self.descriptor.len() - 1])
            }
            Kind::Reference => Some(self.descriptor),
            _ => None,
        }
    }
}

/// Parses one field type at the start of `s`; returns it and the rest.
pub fn parse_field_type(s: &str) -> Option<(FieldType<'_>, &str)> {
    let b = s.as_bytes();
    let mut i = 0;
    while b.get(i) == Some(&b'[') {
        i += 1;
        if i > 255 {
            return None;
        }
    }
    let end = match b.get(i)? {
        b'B' | b'C' | b'I' | b'S' | b'Z' | b'J' | b'F' | b'D' => i + 1,
        b'L' => i + 1 + s[i + 1..].find(';')? + 1,
        _ => return None,
    };
    let kind = if i > 0 {
        Kind::Reference
    } else {
        match b[0] {
            b'J' => Kind::Long,
            b'F' => Kind::Float,
            b'D' => Kind::Double,
            b'L' => Kind::Reference,
            _ => Kind::Int,
        }
    };
    if kind == Kind::Reference && b[i] == b'L' && end == i + 2 {
        return None; // "L;"
    }
    Some((
        FieldType {
            kind,
            descriptor: &s[..end],
        },
        &s[end..],
    ))
}

/// Where the field type starting at `b[i]` ends, with [`parse_field_type`]'s rules.
fn field_type_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while b.get(i) == Some(&b'[') {
        i += 1;
        if i - start > 255 {
            return None;
        }
    }
    match b.get(i)? {
        b'B' | b'C' | b'I' | b'S' | b'Z' | b'J' | b'F' | b'D' => Some(i + 1),
        b'L' => match b[i + 1..].iter().position(|&c| c == b';')? {
            0 => None, // "L;"
            n => Some(i + n + 2),
        },
        _ => None,
    }
}

/// A parsed method descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodDescriptor<'d> {
    /// Parameter types in order.
    pub params: Vec<FieldType<'d>>,
    /// Return type; `None` for void.
    pub ret: Option<FieldType<'d>>,
}

impl<'d> MethodDescriptor<'d> {
    /// Parses `(params)ret`.
    pub fn parse(s: &'d str) -> Option<Self> {
        let mut rest = s.strip_prefix('(')?;
        let mut params = Vec::new();
        while !rest.starts_with(')') {
            let (t, r) = parse_field_type(rest)?;
            params.push(t);
            rest = r;
        }
        rest = &rest[1..];
        let ret = if rest == "V" {
            None
        } else {
            let (t, r) = parse_field_type(rest)?;
            if !r.is_empty() {
                return None;
            }
            Some(t)
        };
        Some(MethodDescriptor { params, ret })
    }

    /// True when [`Self::parse`] accepts `s` (checked on bytes, without allocating).
    pub fn is_valid(s: &str) -> bool {
        let b = s.as_bytes();
        if b.first() != Some(&b'(') {
            return false;
        }
        let mut i = 1;
        loop {
            match b.get(i) {
                Some(b')') => break,
                None => return false,
                _ => {}
            }
            match field_type_end(b, i) {
                Some(e) => i = e,
                None => return false,
            }
        }
        i += 1;
        if b.get(i) == Some(&b'V') {
            return i + 1 == b.len();
        }
        field_type_end(b, i) == Some(b.len())
    }

    /// Slots the parameters take (without `this`).
    pub fn param_slots(&self) -> u16 {
        self.params.iter().map(|p| p.kind.slots()).sum()
    }

    /// Slots the return value takes (0 for void).
    pub fn return_slots(&self) -> u16 {
        self.ret.map_or(0, |t| t.kind.slots())
    }
}

/// Slots of the field type starting `d`, and its length in bytes.
fn type_slots(d: &[u8]) -> Option<(u16, usize)> {
    let mut i = 0;
    while d.get(i) == Some(&b'[') {
        i += 1;
    }
    let end = match d.get(i)? {
        b'B' | b'C' | b'I' | b'S' | b'Z' | b'J' | b'F' | b'D' => i + 1,
        b'L' => {
            i + 2
                + d[i + 1..]
                    .iter()
                    .position(|&c| c == b';')
                    .filter(|&p| p > 0)?
        }
        _ => return None,
    };
    let slots = if i == 0 && matches!(d[0], b'J' | b'D') {
        2
    } else {
        1
    };
    Some((slots, end))
}

/// `(parameter slots, return slots)` of a method descriptor given as raw bytes.
pub fn method_slots_bytes(d: &[u8]) -> Option<(u16, u16)> {
    let mut i = 1;
    if d.first() != Some(&b'(') {
        return None;
    }
    let mut params = 0u16;
    while *d.get(i)? != b')' {
        let (s, len) = type_slots(&d[i..])?;
        params = params.checked_add(s)?;
        i += len;
    }
    let ret = &d[i + 1..];
    if ret == b"V" {
        return Some((params, 0));
    }
    match type_slots(ret)? {
        (s, len) if len == ret.len() => Some((params, s)),
        _ => None,
    }
}

/// Slots of a field descriptor given as raw bytes.
pub fn field_slots_bytes(d: &[u8]) -> Option<u16> {
    match type_slots(d)? {
        (s, len) if len == d.len() => Some(s),
        _ => None,
    }
}

/// `(parameter slots, return slots)` of a method descriptor, without allocating.
pub fn method_slots(d: &str) -> Option<(u16, u16)> {
    let mut rest = d.strip_prefix('(')?;
    let mut params = 0u16;
    while !rest.starts_with(')') {
        let (t, r) = parse_field_type(rest)?;
        params = params.checked_add(t.kind.slots())?;
        rest = r;
    }
    let ret = &rest[1..];
    if ret == "V" {
        return Some((params, 0));
    }
    match parse_field_type(ret)? {
        (t, "") => Some((params, t.kind.slots())),
        _ => None,
    }
}

/// Slots taken by a field of descriptor `d`, if it is well-formed.
pub fn field_slots(d: &str) -> Option<u16> {
    match parse_field_type(d)? {
        (t, "") => Some(t.kind.slots()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_valid_agrees_with_parse() {
        let deep = format!("({}I)V", "[".repeat(255));
        let too_deep = format!("({}I)V", "[".repeat(256));
        for d in [
            "()V",
            "(I)V",
            "(IJ)D",
            "([[Ljava/lang/String;)[I",
            "(Ljava/lang/Object;I)Ljava/lang/Object;",
            "",
            "(",
            ")V",
            "()",
            "()VV",
            "(V)V",
            "(L;)V",
            "([L;)V",
            "(Ljava/lang/String)V",
            "()I;",
            "(I",
            "(Q)V",
            "))V",
            "()[",
            "()[V",
            "(I)II",
            deep.as_str(),
            too_deep.as_str(),
        ] {
            assert_eq!(
                MethodDescriptor::is_valid(d),
                MethodDescriptor::parse(d).is_some(),
                "{d:?}"
            );
        }
    }

    #[test]
    fn parses_method_descriptors() {
        let d = MethodDescriptor::parse("(IJ[Ljava/lang/String;D)Ljava/lang/Object;").unwrap();
        assert_eq!(d.params.len(), 4);
        assert_eq!(d.param_slots(), 6);
        assert_eq!(d.return_slots(), 1);
        assert_eq!(d.params[2].class_name(), Some("[Ljava/lang/String;"));
        assert_eq!(d.ret.unwrap().class_name(), Some("java/lang/Object"));
        assert_eq!(MethodDescriptor::parse("()V").unwrap().return_slots(), 0);
        for bad in ["", "(", "()", "(L;)V", "(X)V", "()VV", "(I)II"] {
            assert!(MethodDescriptor::parse(bad).is_none(), "{bad}");
            assert!(method_slots(bad).is_none(), "{bad}");
        }
        assert_eq!(
            method_slots("(IJ[Ljava/lang/String;D)Ljava/lang/Object;"),
            Some((6, 1))
        );
        assert_eq!(method_slots("()J"), Some((0, 2)));
        for d in [
            "(IJ[Ljava/lang/String;D)Ljava/lang/Object;",
            "()J",
            "([[J)V",
            "(L;)V",
            "(I)II",
            "()",
            "(X)V",
        ] {
            assert_eq!(method_slots_bytes(d.as_bytes()), method_slots(d), "{d}");
        }
        assert_eq!(field_slots_bytes(b"[J"), Some(1));
        assert_eq!(field_slots_bytes(b"D"), Some(2));
        assert_eq!(field_slots_bytes(b"Lx;y"), None);
    }
}
