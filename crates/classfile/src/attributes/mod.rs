//! Typed decoding of every attribute of JVMS 4.7 (Java SE 25), plus the JDK's
//! private module attributes.
//!
//! Decoding borrows from the class bytes: code, stack-map frames, opaque bodies and
//! nested attributes stay slices. Every constant-pool index an attribute holds is
//! checked for the right tag, and every error carries the absolute offset of the
//! offending field. [`decode`] returns `StackMapTable` undecoded, since
//! [`crate::code::frames`] owns frames; [`read_all`] decodes those too, and every
//! instruction, with [`crate::code`].
//!
//! ```
//! use ferrofluid_classfile::attributes::{decode, read_all, Attribute, AttributeKind, Context, Location};
//! use ferrofluid_classfile::ClassFile;
//! # let bytes = ferrofluid_classfile::testing::minimal_class();
//! let class = ClassFile::parse(&bytes).unwrap();
//! let method = &class.methods[0];
//! let ctx = Context::new(&class, Location::Method);
//! let Attribute::Code(code) = decode(method.attributes[0], &class.constant_pool, ctx).unwrap() else {
//!     panic!("not a Code attribute");
//! };
//! assert_eq!(code.code, [0xB1]); // return
//!
//! // Or decode everything in the class at once, checking every index:
//! let summary = read_all(&bytes).unwrap();
//! assert_eq!((summary.methods, summary.count(AttributeKind::Code)), (1, 1));
//! ```

mod annotations;
mod code;
mod code_checks;
mod kind;
mod module;
mod reader;
mod summary;
mod tables;

use std::borrow::Cow;

pub use annotations::{
    Annotation, ElementPair, ElementValue, LocalVarTarget, TargetInfo, TypeAnnotation,
    TypePathEntry, MAX_ELEMENT_DEPTH,
};
pub use code::{Code, ExceptionHandler};
pub use kind::AttributeKind;
pub use module::{Export, ModuleAttribute, ModuleHash, ModuleHashes, Provides, Requires};
pub use summary::{read_all, ClassSummary, MAX_ATTRIBUTE_DEPTH};
pub use tables::{
    BootstrapMethod, InnerClass, LineNumber, LocalVariable, MethodParameter, RecordComponent,
};

use crate::class::{ClassFile, RawAttribute};
use crate::constant_pool::ConstantPool;
use crate::error::{ClassError, Result};
use reader::{Reader, Want};

/// Where an attribute was found. Decoding accepts every attribute everywhere;
/// this only tells [`AttributeKind::expected_in`] what the JVMS lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// A `ClassFile`'s own attributes.
    Class,
    /// A `field_info`'s attributes.
    Field,
    /// A `method_info`'s attributes.
    Method,
    /// A `Code` attribute's nested attributes.
    Code,
    /// A `Record` component's attributes.
    RecordComponent,
}

/// Where an attribute is, and the class-file version, which decides which names are
/// predefined. Location does not change decoding: every attribute is accepted everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// Where the attribute was found.
    pub location: Location,
    /// `major_version` of the class.
    pub major: u16,
    /// `minor_version` of the class.
    pub minor: u16,
}

impl Context {
    /// The context for an attribute of `class` found at `location`.
    pub fn new(class: &ClassFile<'_>, location: Location) -> Self {
        Context {
            location,
            major: class.major,
            minor: class.minor,
        }
    }

    /// The same version at another location.
    pub fn at(self, location: Location) -> Self {
        Context { location, ..self }
    }
}

/// One decoded attribute. Constant-pool indices are kept as indices (already checked
/// for the right tag); resolve them with [`ConstantPool`].
#[derive(Debug, Clone)]
pub enum Attribute<'a> {
    /// Index of an Integer, Float, Long, Double or String constant.
    ConstantValue(u16),
    /// A method body (instructions undecoded).
    Code(Code<'a>),
    /// The frames, undecoded: [`crate::code`] decodes them.
    StackMapTable(&'a [u8]),
    /// Class indices of the declared checked exceptions.
    Exceptions(Vec<u16>),
    /// Inner-class records.
    InnerClasses(Vec<InnerClass>),
    /// The enclosing class (Class index) and method (NameAndType index, or 0).
    EnclosingMethod {
        /// Class index of the innermost enclosing class.
        class: u16,
        /// NameAndType index of the enclosing method, or 0.
        method: u16,
    },
    /// The member or class is compiler-generated.
    Synthetic,
    /// Utf8 index of the generic signature.
    Signature(u16),
    /// Utf8 index of the source file name.
    SourceFile(u16),
    /// Extra debug text (modified UTF-8, not checked).
    SourceDebugExtension(&'a [u8]),
    /// `pc` → source line entries.
    LineNumberTable(Vec<LineNumber>),
    /// Local variable names and descriptors.
    LocalVariableTable(Vec<LocalVariable>),
    /// Local variable names and generic signatures (`descriptor` holds the signature).
    LocalVariableTypeTable(Vec<LocalVariable>),
    /// The element is deprecated.
    Deprecated,
    /// Annotations visible at run time.
    RuntimeVisibleAnnotations(Vec<Annotation>),
    /// Annotations kept in the class file only.
    RuntimeInvisibleAnnotations(Vec<Annotation>),
    /// Visible annotations per formal parameter.
    RuntimeVisibleParameterAnnotations(Vec<Vec<Annotation>>),
    /// Invisible annotations per formal parameter.
    RuntimeInvisibleParameterAnnotations(Vec<Vec<Annotation>>),
    /// Visible annotations on types.
    RuntimeVisibleTypeAnnotations(Vec<TypeAnnotation>),
    /// Invisible annotations on types.
    RuntimeInvisibleTypeAnnotations(Vec<TypeAnnotation>),
    /// Default value of an annotation interface element.
    AnnotationDefault(ElementValue),
    /// Bootstrap methods of `invokedynamic` and dynamic constants.
    BootstrapMethods(Vec<BootstrapMethod>),
    /// Formal parameter names and flags.
    MethodParameters(Vec<MethodParameter>),
    /// A module declaration.
    Module(ModuleAttribute),
    /// Package indices of all packages of the module.
    ModulePackages(Vec<u16>),
    /// Class index of the module's main class.
    ModuleMainClass(u16),
    /// Class index of the nest host.
    NestHost(u16),
    /// Class indices of the nest members.
    NestMembers(Vec<u16>),
    /// Record components.
    Record(Vec<RecordComponent<'a>>),
    /// Class indices of the permitted subclasses.
    PermittedSubclasses(Vec<u16>),
    /// JDK-private: hashes of the modules this one depends on (jlink).
    ModuleHashes(ModuleHashes<'a>),
    /// JDK-private: `ModuleResolution` flags (do not resolve by default, incubating...).
    ModuleResolution(u16),
    /// JDK-private: Utf8 index of the target platform (`linux-amd64`), or 0.
    ModuleTarget(u16),
    /// Any other attribute, kept as its bytes.
    Unknown {
        /// The attribute's name.
        name: Cow<'a, str>,
        /// The body.
        data: &'a [u8],
    },
}

impl Attribute<'_> {
    /// The kind, for counting and dispatch.
    pub fn kind(&self) -> AttributeKind {
        use AttributeKind as K;
        match self {
            Attribute::ConstantValue(_) => K::ConstantValue,
            Attribute::Code(_) => K::Code,
            Attribute::StackMapTable(_) => K::StackMapTable,
            Attribute::Exceptions(_) => K::Exceptions,
            Attribute::InnerClasses(_) => K::InnerClasses,
            Attribute::EnclosingMethod { .. } => K::EnclosingMethod,
            Attribute::Synthetic => K::Synthetic,
            Attribute::Signature(_) => K::Signature,
            Attribute::SourceFile(_) => K::SourceFile,
            Attribute::SourceDebugExtension(_) => K::SourceDebugExtension,
            Attribute::LineNumberTable(_) => K::LineNumberTable,
            Attribute::LocalVariableTable(_) => K::LocalVariableTable,
            Attribute::LocalVariableTypeTable(_) => K::LocalVariableTypeTable,
            Attribute::Deprecated => K::Deprecated,
            Attribute::RuntimeVisibleAnnotations(_) => K::RuntimeVisibleAnnotations,
            Attribute::RuntimeInvisibleAnnotations(_) => K::RuntimeInvisibleAnnotations,
            Attribute::RuntimeVisibleParameterAnnotations(_) => {
                K::RuntimeVisibleParameterAnnotations
            }
            Attribute::RuntimeInvisibleParameterAnnotations(_) => {
                K::RuntimeInvisibleParameterAnnotations
            }
            Attribute::RuntimeVisibleTypeAnnotations(_) => K::RuntimeVisibleTypeAnnotations,
            Attribute::RuntimeInvisibleTypeAnnotations(_) => K::RuntimeInvisibleTypeAnnotations,
            Attribute::AnnotationDefault(_) => K::AnnotationDefault,
            Attribute::BootstrapMethods(_) => K::BootstrapMethods,
            Attribute::MethodParameters(_) => K::MethodParameters,
            Attribute::Module(_) => K::Module,
            Attribute::ModulePackages(_) => K::ModulePackages,
            Attribute::ModuleMainClass(_) => K::ModuleMainClass,
            Attribute::NestHost(_) => K::NestHost,
            Attribute::NestMembers(_) => K::NestMembers,
            Attribute::Record(_) => K::Record,
            Attribute::PermittedSubclasses(_) => K::PermittedSubclasses,
            Attribute::ModuleHashes(_) => K::ModuleHashes,
            Attribute::ModuleResolution(_) => K::ModuleResolution,
            Attribute::ModuleTarget(_) => K::ModuleTarget,
            Attribute::Unknown { .. } => K::Unknown,
        }
    }
}

/// The kind of `raw`, from its name (unknown names give [`AttributeKind::Unknown`]).
pub fn kind_of(raw: &RawAttribute<'_>, cp: &ConstantPool<'_>) -> Result<AttributeKind> {
    let name = cp
        .utf8_bytes(raw.name_index)
        .map_err(|e| at(e, raw.offset, "attribute_name_index"))?;
    Ok(AttributeKind::from_name(name))
}

/// Decodes one attribute, checking its length, layout and constant-pool indices.
///
/// A known name in a class file older than the attribute (see [`AttributeKind::since`])
/// decodes as [`Attribute::Unknown`], as the JVM ignores it there.
pub fn decode<'a>(
    raw: RawAttribute<'a>,
    cp: &ConstantPool<'a>,
    context: Context,
) -> Result<Attribute<'a>> {
    use AttributeKind as K;
    let mut kind = kind_of(&raw, cp)?;
    if context.major < kind.since() {
        kind = K::Unknown;
    }
    let mut r = Reader::new(raw, cp, kind.name());
    let attribute = match kind {
        K::ConstantValue => {
            Attribute::ConstantValue(r.index(Want::CONSTANT_VALUE, "constantvalue_index")?)
        }
        K::Code => return Code::parse(raw, cp).map(Attribute::Code),
        K::StackMapTable => return Ok(Attribute::StackMapTable(raw.data)),
        K::Exceptions => Attribute::Exceptions(r.index_list(Want::CLASS, "exception_index")?),
        K::InnerClasses => Attribute::InnerClasses(tables::inner_classes(&mut r)?),
        K::EnclosingMethod => Attribute::EnclosingMethod {
            class: r.index(Want::CLASS, "class_index")?,
            method: r.opt_index(Want::NAME_AND_TYPE, "method_index")?,
        },
        K::Synthetic => Attribute::Synthetic,
        K::Signature => Attribute::Signature(r.index(Want::UTF8, "signature_index")?),
        K::SourceFile => Attribute::SourceFile(r.index(Want::UTF8, "sourcefile_index")?),
        K::SourceDebugExtension => return Ok(Attribute::SourceDebugExtension(raw.data)),
        K::LineNumberTable => Attribute::LineNumberTable(tables::line_numbers(&mut r)?),
        K::LocalVariableTable => {
            Attribute::LocalVariableTable(tables::local_variables(&mut r, "descriptor_index")?)
        }
        K::LocalVariableTypeTable => {
            Attribute::LocalVariableTypeTable(tables::local_variables(&mut r, "signature_index")?)
        }
        K::Deprecated => Attribute::Deprecated,
        K::RuntimeVisibleAnnotations => {
            Attribute::RuntimeVisibleAnnotations(annotations::annotations(&mut r)?)
        }
        K::RuntimeInvisibleAnnotations => {
            Attribute::RuntimeInvisibleAnnotations(annotations::annotations(&mut r)?)
        }
        K::RuntimeVisibleParameterAnnotations => Attribute::RuntimeVisibleParameterAnnotations(
            annotations::parameter_annotations(&mut r)?,
        ),
        K::RuntimeInvisibleParameterAnnotations => Attribute::RuntimeInvisibleParameterAnnotations(
            annotations::parameter_annotations(&mut r)?,
        ),
        K::RuntimeVisibleTypeAnnotations => {
            Attribute::RuntimeVisibleTypeAnnotations(annotations::type_annotations(&mut r)?)
        }
        K::RuntimeInvisibleTypeAnnotations => {
            Attribute::RuntimeInvisibleTypeAnnotations(annotations::type_annotations(&mut r)?)
        }
        K::AnnotationDefault => {
            Attribute::AnnotationDefault(annotations::element_value(&mut r, 0)?)
        }
        K::BootstrapMethods => Attribute::BootstrapMethods(tables::bootstrap_methods(&mut r)?),
        K::MethodParameters => Attribute::MethodParameters(tables::method_parameters(&mut r)?),
        K::Module => Attribute::Module(module::module(&mut r)?),
        K::ModulePackages => {
            Attribute::ModulePackages(r.index_list(Want::PACKAGE, "package_index")?)
        }
        K::ModuleMainClass => Attribute::ModuleMainClass(r.index(Want::CLASS, "main_class_index")?),
        K::NestHost => Attribute::NestHost(r.index(Want::CLASS, "host_class_index")?),
        K::NestMembers => Attribute::NestMembers(r.index_list(Want::CLASS, "class")?),
        K::Record => Attribute::Record(tables::record_components(&mut r)?),
        K::PermittedSubclasses => {
            Attribute::PermittedSubclasses(r.index_list(Want::CLASS, "class")?)
        }
        K::ModuleHashes => Attribute::ModuleHashes(module::module_hashes(&mut r)?),
        K::ModuleResolution => Attribute::ModuleResolution(r.u16("resolution_flags")?),
        K::ModuleTarget => {
            Attribute::ModuleTarget(r.opt_index(Want::UTF8, "target_platform_index")?)
        }
        K::Unknown => {
            let name = cp
                .utf8(raw.name_index)
                .map_err(|e| at(e, raw.offset, "attribute_name_index"))?;
            return Ok(Attribute::Unknown {
                name,
                data: raw.data,
            });
        }
    };
    r.finish()?;
    Ok(attribute)
}

/// Moves a constant-pool error (which has no position) to the field that held the index.
fn at(e: ClassError, offset: usize, what: &str) -> ClassError {
    ClassError::new(e.kind().clone(), offset, format!("{what}: {}", e.message()))
}
