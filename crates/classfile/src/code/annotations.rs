//! Relocating code offsets inside type annotations (JVMS 4.7.20) of a `Code` attribute.

use crate::bytes::Cursor;
use crate::error::{ErrorKind, Result};

/// Deepest nesting of annotation values accepted (hostile input must not overflow the stack).
const MAX_DEPTH: u32 = 64;

type Map<'m> = &'m dyn Fn(u32) -> Option<u32>;

/// Copies a Runtime(In)VisibleTypeAnnotations body, rewriting each code offset:
/// ranges (`localvar_target`) through `target`, instruction offsets
/// (`offset_target`, `type_argument_target`) through `insn`.
pub fn relocate_type_annotations(
    data: &[u8],
    base: usize,
    target: Map<'_>,
    insn: Map<'_>,
) -> Result<Vec<u8>> {
    let mut out = data.to_vec();
    let mut c = Cursor::new(data, base);
    let n = c.u16("num_annotations")?;
    for _ in 0..n {
        let tt = c.u8("target_type")?;
        match tt {
            0x00 | 0x01 | 0x16 => c.skip(1, "target_info")?,
            0x10 | 0x17 | 0x42 => c.skip(2, "target_info")?,
            0x11 | 0x12 => c.skip(2, "target_info")?,
            0x13..=0x15 => {}
            0x40 | 0x41 => {
                let len = c.u16("table_length")?;
                for _ in 0..len {
                    let at = c.pos();
                    let start = c.u16("start_pc")? as u32;
                    let length = c.u16("length")? as u32;
                    c.skip(2, "index")?;
                    let ns = map(&c, target, start)?;
                    let ne = map(&c, target, start + length)?;
                    out[at..at + 2].copy_from_slice(&(ns as u16).to_be_bytes());
                    out[at + 2..at + 4].copy_from_slice(&((ne - ns) as u16).to_be_bytes());
                }
            }
            0x43..=0x4B => {
                let at = c.pos();
                let off = c.u16("offset")? as u32;
                let new = map(&c, insn, off)?;
                out[at..at + 2].copy_from_slice(&(new as u16).to_be_bytes());
                if tt >= 0x47 {
                    c.skip(1, "type_argument_index")?;
                }
            }
            other => {
                return Err(c.error(
                    ErrorKind::BadAttribute,
                    format!("unknown type annotation target {other:#x}"),
                ))
            }
        }
        let path = c.u8("type_path length")? as usize;
        c.skip(2 * path, "type_path")?;
        skip_annotation(&mut c, 0)?;
    }
    c.expect_end("type annotations")?;
    Ok(out)
}

fn map(c: &Cursor<'_>, f: Map<'_>, off: u32) -> Result<u32> {
    f(off).ok_or_else(|| {
        c.error(
            ErrorKind::BadAttribute,
            format!("type annotation offset {off} is not an instruction"),
        )
    })
}

/// Skips `type_index`, `num_element_value_pairs` and the pairs.
pub fn skip_annotation(c: &mut Cursor<'_>, depth: u32) -> Result<()> {
    c.skip(2, "annotation type_index")?;
    let pairs = c.u16("num_element_value_pairs")?;
    for _ in 0..pairs {
        c.skip(2, "element_name_index")?;
        skip_element_value(c, depth + 1)?;
    }
    Ok(())
}

/// Skips one `element_value`.
pub fn skip_element_value(c: &mut Cursor<'_>, depth: u32) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(c.error(
            ErrorKind::BadAttribute,
            "annotation values nested too deeply",
        ));
    }
    match c.u8("element_value tag")? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => {
            c.skip(2, "const_value_index")
        }
        b'e' => c.skip(4, "enum_const_value"),
        b'@' => skip_annotation(c, depth + 1),
        b'[' => {
            let n = c.u16("num_values")?;
            for _ in 0..n {
                skip_element_value(c, depth + 1)?;
            }
            Ok(())
        }
        t => Err(c.error(
            ErrorKind::BadAttribute,
            format!("unknown element_value tag {t:#x}"),
        )),
    }
}
