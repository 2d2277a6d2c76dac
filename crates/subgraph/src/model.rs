//! What the planner knows about a class: its supertypes, its methods and, for each
//! method, the methods it may call. Read from class bytes by [`ClassModel::parse`],
//! or built by hand in tests.

use std::borrow::Cow;
use std::collections::HashSet;

use ferrofluid_classfile::attributes::{self, Attribute, Context, Location};
use ferrofluid_classfile::class::access;
use ferrofluid_classfile::code::cold::deferred_instructions;
use ferrofluid_classfile::code::{insn, opcodes};
use ferrofluid_classfile::constant_pool;
use ferrofluid_classfile::{ClassFile, Constant, ConstantPool};

use crate::error::SubgraphError;

/// How a call site dispatches, which decides how many methods it may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallKind {
    /// `invokestatic`: the named method, looked up in the class and its superclasses.
    Static,
    /// `invokespecial` (constructors, `super.m()`, old private calls): exactly the resolved method.
    Special,
    /// `invokevirtual`: the resolved method and its overrides in loaded subclasses.
    Virtual,
    /// `invokeinterface`: the implementations in loaded implementors, default methods included.
    Interface,
}

impl CallKind {
    /// Whether the target depends on the receiver's class.
    pub fn is_virtual(self) -> bool {
        matches!(self, CallKind::Virtual | CallKind::Interface)
    }
}

/// One call site: how it dispatches and the method reference it names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallSite<'a> {
    /// Dispatch kind.
    pub kind: CallKind,
    /// Internal name of the class in the reference.
    pub class: Cow<'a, str>,
    /// Method name.
    pub name: Cow<'a, str>,
    /// Method descriptor.
    pub descriptor: Cow<'a, str>,
    /// The call is deferred (`ferrofluid_classfile::code::cold::deferred_instructions`: an
    /// invocation of its method may not make it).
    pub deferred: bool,
}

impl<'a> CallSite<'a> {
    /// A call site from borrowed names (handy in tests).
    pub fn new(kind: CallKind, class: &'a str, name: &'a str, descriptor: &'a str) -> Self {
        CallSite {
            kind,
            class: Cow::Borrowed(class),
            name: Cow::Borrowed(name),
            descriptor: Cow::Borrowed(descriptor),
            deferred: false,
        }
    }

    /// The same call, owning its names.
    pub fn into_owned(self) -> CallSite<'static> {
        CallSite {
            kind: self.kind,
            class: Cow::Owned(self.class.into_owned()),
            name: Cow::Owned(self.name.into_owned()),
            descriptor: Cow::Owned(self.descriptor.into_owned()),
            deferred: self.deferred,
        }
    }

    /// The same call, marked deferred.
    pub fn deferred(self) -> Self {
        CallSite {
            deferred: true,
            ..self
        }
    }
}

/// One method of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodModel<'a> {
    /// Name.
    pub name: Cow<'a, str>,
    /// Descriptor.
    pub descriptor: Cow<'a, str>,
    /// Access flags (`ferrofluid_classfile::class::access`).
    pub access: u16,
    /// Call sites in bytecode order (duplicates allowed; the registry drops them).
    pub calls: Vec<CallSite<'a>>,
    /// Internal names of the classes named by its `getstatic` and `putstatic` instructions
    /// (duplicates allowed). Such an access initialises the field's declaring class, the named
    /// class or one of its supertypes (JVMS 5.4.3.2, 5.5), with no call site naming its
    /// `<clinit>`. Fields declared by the method's own class are left out: that class is
    /// initialised, or being initialised, whenever its code runs.
    pub static_fields: Vec<Cow<'a, str>>,
    /// Accessor-sized straight-line code that calls nothing ([`is_trivial`]): its time is a
    /// few nanoseconds, less than a probe pair costs, so it can be left to its callers.
    pub trivial: bool,
}

impl<'a> MethodModel<'a> {
    /// A method from borrowed names.
    pub fn new(name: &'a str, descriptor: &'a str, access: u16, calls: Vec<CallSite<'a>>) -> Self {
        MethodModel {
            name: Cow::Borrowed(name),
            descriptor: Cow::Borrowed(descriptor),
            access,
            calls,
            static_fields: Vec::new(),
            trivial: false,
        }
    }

    /// The same method, marked trivial.
    pub fn trivial(self) -> Self {
        MethodModel {
            trivial: true,
            ..self
        }
    }

    /// The same method, also accessing static fields named with these classes.
    pub fn with_static_fields(mut self, classes: &[&'a str]) -> Self {
        self.static_fields
            .extend(classes.iter().map(|&c| Cow::Borrowed(c)));
        self
    }
}

/// A class as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassModel<'a> {
    /// Internal name.
    pub name: Cow<'a, str>,
    /// Internal name of the superclass (`None` for `java/lang/Object` and module-info).
    pub super_name: Option<Cow<'a, str>>,
    /// Internal names of the direct superinterfaces.
    pub interfaces: Vec<Cow<'a, str>>,
    /// Class access flags (`INTERFACE`, `ABSTRACT`...).
    pub access: u16,
    /// Methods in file order.
    pub methods: Vec<MethodModel<'a>>,
    /// Its `LambdaMetafactory` `invokedynamic` sites, each once. The JVM implements their
    /// interfaces with hidden classes, which no class-hierarchy analysis sees: under `lazy` a
    /// call on such an interface is a receiver site, under `eager` it reaches their
    /// implementation methods.
    pub lambdas: Vec<Lambda<'a>>,
}

/// A lambda or method reference a class makes: the hidden class implementing `interface`
/// runs `target` when its `method` is called.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lambda<'a> {
    /// Internal name of the functional interface.
    pub interface: Cow<'a, str>,
    /// The interface method the lambda implements (the `invokedynamic`'s name).
    pub method: Cow<'a, str>,
    /// The implementation method, as the call the hidden class makes.
    pub target: CallSite<'a>,
}

/// `java/lang/invoke/LambdaMetafactory`: its bootstraps turn an `invokedynamic`
/// into a call of the implementation method handle.
const LAMBDA_METAFACTORY: &str = "java/lang/invoke/LambdaMetafactory";

impl<'a> ClassModel<'a> {
    /// A class from borrowed names.
    pub fn new(
        name: &'a str,
        super_name: Option<&'a str>,
        interfaces: &[&'a str],
        access: u16,
        methods: Vec<MethodModel<'a>>,
    ) -> Self {
        ClassModel {
            name: Cow::Borrowed(name),
            super_name: super_name.map(Cow::Borrowed),
            interfaces: interfaces.iter().map(|&i| Cow::Borrowed(i)).collect(),
            access,
            methods,
            lambdas: Vec::new(),
        }
    }

    /// The same class, also making a lambda of `interface` whose `method` runs `target`.
    pub fn with_lambda(
        mut self,
        interface: &'a str,
        method: &'a str,
        target: CallSite<'a>,
    ) -> Self {
        self.lambdas.push(Lambda {
            interface: Cow::Borrowed(interface),
            method: Cow::Borrowed(method),
            target,
        });
        self
    }

    /// The interfaces it makes lambdas of, each once.
    pub fn lambda_interfaces(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for lambda in &self.lambdas {
            if !out.contains(&lambda.interface.as_ref()) {
                out.push(&lambda.interface);
            }
        }
        out
    }

    /// Whether this is an interface.
    pub fn is_interface(&self) -> bool {
        self.access & access::INTERFACE != 0
    }

    /// Reads a class file: supertypes, methods, and each method's call sites and static field
    /// accesses from its bytecode. `invokedynamic` sites bootstrapped by `LambdaMetafactory`
    /// become a call of the lambda's implementation method; other `invokedynamic` sites
    /// (string concatenation, records, switch patterns) are ignored.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, SubgraphError> {
        let class = ClassFile::parse(bytes)?;
        let cp = &class.constant_pool;
        let interfaces = class
            .interfaces
            .iter()
            .map(|&i| cp.class_name(i))
            .collect::<Result<Vec<_>, _>>()?;
        let bootstraps = bootstrap_methods(&class)?;
        let name = class.name()?;
        let mut own = OwnStatics {
            class: name.clone(),
            fields: HashSet::new(),
        };
        for field in class
            .fields
            .iter()
            .filter(|f| f.access & access::STATIC != 0)
        {
            own.fields.insert((field.name(cp)?, field.descriptor(cp)?));
        }
        let mut methods = Vec::with_capacity(class.methods.len());
        for member in &class.methods {
            let refs = match member.attribute(cp, "Code") {
                Some(raw) => {
                    let code = attributes::Code::parse(raw, cp)?;
                    code_refs(cp, code.code, code.code_offset, &bootstraps, &own)?
                }
                None => CodeRefs::default(),
            };
            methods.push(MethodModel {
                name: member.name(cp)?,
                descriptor: member.descriptor(cp)?,
                access: member.access,
                calls: refs.calls,
                static_fields: refs.static_fields,
                trivial: refs.trivial && member.access & access::SYNCHRONIZED == 0,
            });
        }
        Ok(ClassModel {
            name,
            super_name: class.super_name()?,
            interfaces,
            access: class.access,
            methods,
            lambdas: lambdas(cp, &bootstraps)?,
        })
    }
}

/// The implementation method handle of each bootstrap entry that is a
/// `LambdaMetafactory` call, by bootstrap index; `None` for other bootstraps.
fn bootstrap_methods(class: &ClassFile<'_>) -> Result<Vec<Option<u16>>, SubgraphError> {
    let Some(raw) = class.attribute("BootstrapMethods") else {
        return Ok(Vec::new());
    };
    let cp = &class.constant_pool;
    let Attribute::BootstrapMethods(entries) =
        attributes::decode(raw, cp, Context::new(class, Location::Class))?
    else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let is_lambda = match cp.get(entry.method)? {
            Constant::MethodHandle { reference, .. } => {
                let target = cp.member_ref(reference)?;
                target.class == LAMBDA_METAFACTORY
                    && (target.name == "metafactory" || target.name == "altMetafactory")
            }
            _ => false,
        };
        // Both metafactories take (samMethodType, implMethod, instantiatedMethodType, ...).
        out.push(if is_lambda {
            entry.arguments.get(1).copied()
        } else {
            None
        });
    }
    Ok(out)
}

/// A class's name and its static fields `(name, descriptor)`.
struct OwnStatics<'a> {
    class: Cow<'a, str>,
    fields: HashSet<(Cow<'a, str>, Cow<'a, str>)>,
}

/// What the planner reads from one method body.
#[derive(Default)]
struct CodeRefs<'a> {
    calls: Vec<CallSite<'a>>,
    /// The classes its static field accesses name ([`MethodModel::static_fields`]).
    static_fields: Vec<Cow<'a, str>>,
    trivial: bool,
}

/// Longest trivial body, in bytes: HotSpot's `MaxInlineSize`, under which it inlines a method
/// however rarely called (getters, setters, small arithmetic).
pub const TRIVIAL_MAX_CODE: usize = 35;

/// Whether a body is trivial: at most [`TRIVIAL_MAX_CODE`] bytes, no backward branch (so no
/// loop: each instruction runs at most once), and nothing whose cost is unbounded or that runs
/// other code: no call, allocation, `athrow`, monitor, subroutine, nor a constant that loads a
/// class or links a call site. Static fields of other classes (which may run an initialiser)
/// are excluded by the caller. Such a body runs in a few nanoseconds, less than its probes.
pub fn is_trivial(cp: &ConstantPool<'_>, code: &[u8], insns: &[insn::Insn]) -> bool {
    code.len() <= TRIVIAL_MAX_CODE
        && insns.iter().all(|i| {
            let simple = match i.op {
                opcodes::INVOKEVIRTUAL..=opcodes::MULTIANEWARRAY => matches!(
                    i.op,
                    opcodes::ARRAYLENGTH | opcodes::CHECKCAST | opcodes::INSTANCEOF
                ),
                opcodes::JSR | opcodes::RET | opcodes::JSR_W => false,
                opcodes::LDC | opcodes::LDC_W => match i.operand {
                    insn::Operand::Constant(index) => matches!(
                        cp.get(index),
                        Ok(Constant::Integer(_) | Constant::Float(_) | Constant::String { .. })
                    ),
                    _ => false,
                },
                _ => true,
            };
            simple && i.targets().all(|t| t > i.offset)
        })
}

/// Call sites of one method body, the classes its static field accesses name, and whether it
/// is trivial.
fn code_refs<'a>(
    cp: &ConstantPool<'a>,
    code: &[u8],
    code_offset: usize,
    bootstraps: &[Option<u16>],
    own: &OwnStatics<'a>,
) -> Result<CodeRefs<'a>, SubgraphError> {
    let mut calls = Vec::new();
    let mut static_fields = Vec::new();
    let insns = insn::decode_all(code, code_offset)?;
    let trivial = is_trivial(cp, code, &insns);
    let deferred = deferred_instructions(&insns);
    for (i, deferred) in insns.into_iter().zip(deferred) {
        let insn::Operand::Constant(index) = i.operand else {
            continue;
        };
        let kind = match i.op {
            opcodes::INVOKEDYNAMIC => {
                if let Some(site) = lambda_target(cp, index, bootstraps)? {
                    calls.push(site);
                }
                continue;
            }
            opcodes::GETSTATIC | opcodes::PUTSTATIC => {
                if let Some(class) = static_field_class(cp, index, own)? {
                    static_fields.push(class);
                }
                continue;
            }
            op => match invoke_kind(op) {
                Some(kind) => kind,
                None => continue,
            },
        };
        calls.push(call_of(cp, kind, index, deferred)?);
    }
    let trivial = trivial && static_fields.is_empty();
    Ok(CodeRefs {
        calls,
        static_fields,
        trivial,
    })
}

/// The class a `getstatic`/`putstatic` of Fieldref `index` names, unless the field is one of
/// the class's own.
fn static_field_class<'a>(
    cp: &ConstantPool<'a>,
    index: u16,
    own: &OwnStatics<'a>,
) -> Result<Option<Cow<'a, str>>, SubgraphError> {
    let Constant::Fieldref {
        class,
        name_and_type,
    } = cp.get(index)?
    else {
        return Ok(None);
    };
    let class = cp.class_name(class)?;
    if class == own.class && own.fields.contains(&cp.name_and_type(name_and_type)?) {
        return Ok(None);
    }
    Ok(Some(class))
}

/// The calls a method body makes (`invokestatic`, `invokespecial`, `invokevirtual`,
/// `invokeinterface`), read from its bytecode and its class's constant pool on their own: what
/// JVMTI gives for a class no `ClassFileLoadHook` showed (a hidden class, such as a lambda proxy),
/// see [`ConstantPool::parse_standalone`]. `invokedynamic` sites are left out.
pub fn calls_in_code<'a>(pool: &'a [u8], code: &[u8]) -> Result<Vec<CallSite<'a>>, SubgraphError> {
    let cp = ConstantPool::parse_standalone(pool)?;
    let mut calls = Vec::new();
    for i in insn::decode_all(code, 0)? {
        if let (Some(kind), insn::Operand::Constant(index)) = (invoke_kind(i.op), i.operand) {
            calls.push(call_of(&cp, kind, index, false)?);
        }
    }
    Ok(calls)
}

/// How an `invoke*` opcode other than `invokedynamic` dispatches; `None` for other opcodes.
fn invoke_kind(op: u8) -> Option<CallKind> {
    match op {
        opcodes::INVOKESTATIC => Some(CallKind::Static),
        opcodes::INVOKESPECIAL => Some(CallKind::Special),
        opcodes::INVOKEVIRTUAL => Some(CallKind::Virtual),
        opcodes::INVOKEINTERFACE => Some(CallKind::Interface),
        _ => None,
    }
}

/// The call an `invoke*` of method reference `index` makes.
fn call_of<'a>(
    cp: &ConstantPool<'a>,
    kind: CallKind,
    index: u16,
    deferred: bool,
) -> Result<CallSite<'a>, SubgraphError> {
    let r = cp.member_ref(index)?;
    Ok(CallSite {
        kind,
        class: r.class,
        name: r.name,
        descriptor: r.descriptor,
        deferred,
    })
}

/// The lambda `invokedynamic` entries of `cp`, each once.
fn lambdas<'a>(
    cp: &ConstantPool<'a>,
    bootstraps: &[Option<u16>],
) -> Result<Vec<Lambda<'a>>, SubgraphError> {
    let mut out: Vec<Lambda<'a>> = Vec::new();
    for index in 1..cp.count() {
        if cp.tag(index) != Some(constant_pool::tag::INVOKE_DYNAMIC) {
            continue;
        }
        let Constant::InvokeDynamic { name_and_type, .. } = cp.get(index)? else {
            continue;
        };
        let Some(target) = lambda_target(cp, index, bootstraps)? else {
            continue;
        };
        let (method, descriptor) = cp.name_and_type(name_and_type)?;
        let returned = |d: &str| {
            let (_, r) = d.rsplit_once(')')?;
            Some(r.strip_prefix('L')?.strip_suffix(';')?.len())
        };
        // The return type is the descriptor's tail, without its final `;`.
        let interface = returned(&descriptor).map(|len| match &descriptor {
            Cow::Borrowed(d) => Cow::Borrowed(&d[d.len() - 1 - len..d.len() - 1]),
            Cow::Owned(d) => Cow::Owned(d[d.len() - 1 - len..d.len() - 1].to_owned()),
        });
        let Some(interface) = interface else {
            continue;
        };
        let lambda = Lambda {
            interface,
            method,
            target,
        };
        if !out.contains(&lambda) {
            out.push(lambda);
        }
    }
    Ok(out)
}

/// The implementation method of a lambda `invokedynamic`, as the call the generated
/// proxy makes.
fn lambda_target<'a>(
    cp: &ConstantPool<'a>,
    indy: u16,
    bootstraps: &[Option<u16>],
) -> Result<Option<CallSite<'a>>, SubgraphError> {
    let Constant::InvokeDynamic { bootstrap, .. } = cp.get(indy)? else {
        return Ok(None);
    };
    let Some(Some(handle)) = bootstraps.get(bootstrap as usize).copied() else {
        return Ok(None);
    };
    let Constant::MethodHandle { kind, reference } = cp.get(handle)? else {
        return Ok(None);
    };
    // JVMS 5.4.3.5 reference kinds 5..=9 name methods; 1..=4 are field accessors.
    let kind = match kind {
        5 => CallKind::Virtual,
        6 => CallKind::Static,
        7 | 8 => CallKind::Special,
        9 => CallKind::Interface,
        _ => return Ok(None),
    };
    let r = cp.member_ref(reference)?;
    Ok(Some(CallSite {
        kind,
        class: r.class,
        name: r.name,
        descriptor: r.descriptor,
        // Lambda creation sites are followed as ordinary calls, wherever they are.
        deferred: false,
    }))
}
