//! `read_all`: parse a class and decode everything in it, checking every index.

use super::code_checks::{check_frames, check_instructions, Instructions};
use super::reader::{check_index, Want};
use super::{decode, Attribute, AttributeKind, Context, Location};
use crate::class::{ClassFile, Member, RawAttribute};
use crate::constant_pool::{decode_mutf8, Constant, ConstantPool};
use crate::error::{ClassError, ErrorKind, Result};

/// How deeply attributes may contain attributes (`Code` and `Record` components
/// hold attribute lists). Real classes need 1; this bounds recursion on hostile input.
pub const MAX_ATTRIBUTE_DEPTH: usize = 8;

/// What [`read_all`] found in one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSummary {
    /// Internal name of the class.
    pub name: String,
    /// `major_version`.
    pub major: u16,
    /// `minor_version`.
    pub minor: u16,
    /// Number of fields.
    pub fields: usize,
    /// Number of methods.
    pub methods: usize,
    /// Total bytecode bytes over all `Code` attributes.
    pub code_bytes: usize,
    /// Attributes found where JVMS 4.7 does not list them (decoded anyway).
    pub misplaced: usize,
    /// Instructions decoded over all `Code` attributes.
    pub instructions: usize,
    /// StackMapTable frames decoded.
    pub frames: usize,
    counts: Vec<u32>,
}

impl ClassSummary {
    /// How many attributes of `kind` were decoded, at every level.
    pub fn count(&self, kind: AttributeKind) -> u32 {
        self.counts[kind as usize]
    }

    /// Total number of attributes decoded, at every level.
    pub fn attributes(&self) -> u32 {
        self.counts.iter().sum()
    }
}

/// Parses `bytes` and decodes every attribute at every level (class, fields, methods,
/// `Code` sub-attributes, record components), checking the constant pool's internal
/// references, the tag of every index an attribute holds, handler and debug-table
/// ranges against the code length, and the modified UTF-8 of every Utf8 entry.
/// Method bodies are decoded with [`crate::code`]: every instruction, branch target,
/// handler bound and constant-pool operand, and every StackMapTable frame.
pub fn read_all(bytes: &[u8]) -> Result<ClassSummary> {
    let class = ClassFile::parse(bytes)?;
    let mut walker = Walker {
        class: &class,
        method: None,
        code: None,
        cp: &class.constant_pool,
        context: Context::new(&class, Location::Class),
        summary: ClassSummary {
            name: class.name()?.into_owned(),
            major: class.major,
            minor: class.minor,
            fields: class.fields.len(),
            methods: class.methods.len(),
            code_bytes: 0,
            misplaced: 0,
            instructions: 0,
            frames: 0,
            counts: vec![0; AttributeKind::ALL.len()],
        },
        bootstrap_methods: None,
    };
    check_header(&class)?;
    walker.walk(&class.attributes, Location::Class, 0, None)?;
    for field in &class.fields {
        walker.walk(&field.attributes, Location::Field, 0, None)?;
    }
    for method in &class.methods {
        walker.method = Some(method);
        walker.walk(&method.attributes, Location::Method, 0, None)?;
    }
    check_pool(&class, walker.bootstrap_methods)?;
    Ok(walker.summary)
}

struct Walker<'a, 'c> {
    class: &'c ClassFile<'a>,
    /// The method whose attributes are being walked.
    method: Option<&'c Member<'a>>,
    /// The instructions of the `Code` whose attributes are being walked.
    code: Option<Instructions>,
    cp: &'c ConstantPool<'a>,
    context: Context,
    summary: ClassSummary,
    /// Entry count of the class's `BootstrapMethods`, once seen.
    bootstrap_methods: Option<usize>,
}

impl<'a> Walker<'a, '_> {
    /// Decodes `attributes` and what they nest; `code_length` is set inside a `Code`.
    fn walk(
        &mut self,
        attributes: &[RawAttribute<'a>],
        location: Location,
        depth: usize,
        code_length: Option<usize>,
    ) -> Result<()> {
        for &raw in attributes {
            if depth > MAX_ATTRIBUTE_DEPTH {
                return Err(ClassError::new(
                    ErrorKind::BadAttribute,
                    raw.offset,
                    format!("attributes nested deeper than {MAX_ATTRIBUTE_DEPTH}"),
                ));
            }
            let attribute = decode(raw, self.cp, self.context.at(location))?;
            let kind = attribute.kind();
            self.summary.counts[kind as usize] += 1;
            if !kind.expected_in(location) {
                self.summary.misplaced += 1;
            }
            if let Some(length) = code_length {
                check_debug_table(&attribute, &raw, length)?;
            }
            match attribute {
                Attribute::Code(code) => {
                    self.summary.code_bytes += code.code.len();
                    let instructions = check_instructions(&code, self.cp, self.context.major)?;
                    self.summary.instructions += instructions.count;
                    let outer = self.code.replace(instructions);
                    let walked = self.walk(
                        &code.attributes,
                        Location::Code,
                        depth + 1,
                        Some(code.code.len()),
                    );
                    self.code = outer;
                    walked?;
                }
                Attribute::StackMapTable(_) if location == Location::Code => {
                    // Frames are typed against the method's descriptor: only a
                    // method's own Code has one.
                    if let (Some(method), Some(code), 1) = (self.method, &self.code, depth) {
                        self.summary.frames += check_frames(self.class, method, &raw, code)?;
                    }
                }
                Attribute::Record(components) => {
                    for component in &components {
                        self.walk(
                            &component.attributes,
                            Location::RecordComponent,
                            depth + 1,
                            None,
                        )?;
                    }
                }
                Attribute::BootstrapMethods(methods) if location == Location::Class => {
                    if self.bootstrap_methods.is_some() {
                        return Err(ClassError::new(
                            ErrorKind::BadAttribute,
                            raw.offset,
                            "more than one BootstrapMethods attribute",
                        ));
                    }
                    self.bootstrap_methods = Some(methods.len());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Debug tables must point into the code they describe (as HotSpot checks when verifying).
fn check_debug_table(
    attribute: &Attribute<'_>,
    raw: &RawAttribute<'_>,
    length: usize,
) -> Result<()> {
    // Entries start after the u2 table length.
    let base = raw.data_offset() + 2;
    match attribute {
        Attribute::LineNumberTable(lines) => {
            if let Some(i) = lines.iter().position(|l| l.start_pc as usize >= length) {
                return Err(ClassError::new(
                    ErrorKind::BadAttribute,
                    base + 4 * i,
                    format!(
                        "LineNumberTable: start_pc {} is past the code (length {length})",
                        lines[i].start_pc
                    ),
                ));
            }
        }
        Attribute::LocalVariableTable(vars) | Attribute::LocalVariableTypeTable(vars) => {
            if let Some(i) = vars
                .iter()
                .position(|v| v.start_pc as usize + v.length as usize > length)
            {
                return Err(ClassError::new(
                    ErrorKind::BadAttribute,
                    base + 10 * i,
                    format!(
                        "{}: range [{}, +{}) is outside the code (length {length})",
                        attribute.kind().name(),
                        vars[i].start_pc,
                        vars[i].length
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// `super_class` and `interfaces` must name classes (`this_class` is checked by the parser).
fn check_header(class: &ClassFile<'_>) -> Result<()> {
    let cp = &class.constant_pool;
    let at = class.access_offset;
    if class.super_class != 0 {
        check_index(
            cp,
            class.super_class,
            Want::CLASS,
            at + 4,
            format_args!("super_class"),
        )?;
    }
    for (i, &interface) in class.interfaces.iter().enumerate() {
        check_index(
            cp,
            interface,
            Want::CLASS,
            at + 8 + 2 * i,
            format_args!("interfaces[{i}]"),
        )?;
    }
    Ok(())
}

/// Every reference inside the pool has the right tag, method handles have a valid kind,
/// dynamic constants name an existing bootstrap method, and Utf8 entries decode.
fn check_pool(class: &ClassFile<'_>, bootstrap_methods: Option<usize>) -> Result<()> {
    let cp = &class.constant_pool;
    for index in 1..cp.count() {
        let Some(offset) = cp.offset_of(index) else {
            continue;
        };
        let check = |field: usize, value: u16, want: Want| {
            check_index(
                cp,
                value,
                want,
                offset + field,
                format_args!("constant {index}"),
            )
        };
        match cp.get(index)? {
            Constant::Utf8(bytes) => {
                if decode_mutf8(bytes).is_none() {
                    return Err(ClassError::new(
                        ErrorKind::BadUtf8,
                        offset,
                        format!("constant {index}: malformed modified UTF-8"),
                    ));
                }
            }
            Constant::Class { name: n }
            | Constant::String { utf8: n }
            | Constant::MethodType { descriptor: n }
            | Constant::Module { name: n }
            | Constant::Package { name: n } => {
                check(1, n, Want::UTF8)?;
            }
            Constant::Fieldref {
                class: c,
                name_and_type: nt,
            }
            | Constant::Methodref {
                class: c,
                name_and_type: nt,
            }
            | Constant::InterfaceMethodref {
                class: c,
                name_and_type: nt,
            } => {
                check(1, c, Want::CLASS)?;
                check(3, nt, Want::NAME_AND_TYPE)?;
            }
            Constant::NameAndType { name, descriptor } => {
                check(1, name, Want::UTF8)?;
                check(3, descriptor, Want::UTF8)?;
            }
            Constant::MethodHandle { kind, reference } => {
                let want = match kind {
                    1..=4 => Want::FIELD_REF,
                    5 | 8 => Want::METHOD_REF,
                    6 | 7 if class.major >= 52 => Want::ANY_METHOD_REF,
                    6 | 7 => Want::METHOD_REF,
                    9 => Want::INTERFACE_METHOD_REF,
                    _ => {
                        return Err(ClassError::new(
                            ErrorKind::BadConstantIndex,
                            offset + 1,
                            format!(
                            "constant {index}: MethodHandle reference_kind {kind} is outside 1..=9"
                        ),
                        ))
                    }
                };
                check(2, reference, want)?;
            }
            Constant::Dynamic {
                bootstrap,
                name_and_type,
            }
            | Constant::InvokeDynamic {
                bootstrap,
                name_and_type,
            } => {
                check(3, name_and_type, Want::NAME_AND_TYPE)?;
                let available = bootstrap_methods.unwrap_or(0);
                if bootstrap as usize >= available {
                    return Err(ClassError::new(
                        ErrorKind::BadConstantIndex,
                        offset + 1,
                        format!(
                            "constant {index}: bootstrap_method_attr_index {bootstrap} but the class has {available} bootstrap methods"
                        ),
                    ));
                }
            }
            Constant::Integer(_)
            | Constant::Float(_)
            | Constant::Long(_)
            | Constant::Double(_)
            | Constant::Unusable => {}
        }
    }
    Ok(())
}
