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

    /// Slots the parameters take (without `this`).
    pub fn param_slots(&self) -> u16 {
        self.params.iter().map(|p| p.kind.slots()).sum()
    }

    /// Slots the return value takes (0 for void).
    pub fn return_slots(&self) -> u16 {
        self.ret.map_or(0, |t| t.kind.slots())
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
        }
    }
}
