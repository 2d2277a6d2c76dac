//! HotSpot's VMStructs: the tables of field offsets, static addresses and type sizes that libjvm
//! exports for its serviceability agent (`gHotSpotVMStructs`, `gHotSpotVMTypes`). The sampler
//! reads them for two things JVMTI offers only through an expensive event: turning on
//! `DebugNonSafepoints` (what an environment with `CompiledMethodLoad` on does, at the price of
//! HotSpot building every compiled method's address map for the event), and finding which
//! frame's compiled code a sample's program counter is in (the frame types).
//!
//! The tables describe the running JVM's own layout, so nothing here depends on a JDK version;
//! what a JVM does not describe is simply not used (the sampler then falls back on the event).

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

/// One `VMStructEntry`: a field's offset, or a static field's address.
#[derive(Debug, Clone, Copy)]
struct Field {
    offset: u64,
    address: usize,
    is_static: bool,
}

/// The running JVM's tables, read once.
#[derive(Debug, Default)]
pub(crate) struct VmStructs {
    fields: HashMap<(String, String), Field>,
    sizes: HashMap<String, u64>,
    /// Where compiled code is, found once ([`VmStructs::find_code_layout`]).
    layout: Option<CodeLayout>,
}

/// What `csrc/walk_guard.c`'s `jvmtiprof_compiled_frame` reads, mirrored there as
/// `jvmtiprof_code_layout`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct CodeLayout {
    low_bound: *const usize,
    high_bound: *const usize,
    method_code: i32,
    method_const: i32,
    const_constants: i32,
    pool_holder: i32,
    osr_head: i32,
    osr_link: i32,
    code_method: i32,
    code_begin: i32,
    code_end: i32,
    relative: i32,
}

// SAFETY: two addresses of libjvm's static variables (never freed) and plain offsets.
unsafe impl Send for CodeLayout {}
// SAFETY: as above; only read.
unsafe impl Sync for CodeLayout {}

/// The running JVM's tables, `None` when libjvm exports none (not HotSpot).
pub(crate) fn get() -> Option<&'static VmStructs> {
    static TABLES: OnceLock<Option<VmStructs>> = OnceLock::new();
    TABLES.get_or_init(read).as_ref()
}

/// A `uint64_t` libjvm exports, by name.
fn exported(name: &CStr) -> Option<u64> {
    // SAFETY: a symbol lookup in the already loaded libraries, by a C string.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: HotSpot exports these as `uint64_t` (or a pointer, the same width here).
    (!p.is_null()).then(|| unsafe { *(p as *const u64) })
}

/// The C string at `p`, if any.
///
/// # Safety
/// `p` is null or a NUL-terminated string that lives as long as libjvm.
unsafe fn string(p: usize) -> Option<String> {
    // SAFETY: as the caller promises.
    (p != 0).then(|| {
        unsafe { CStr::from_ptr(p as *const c_char) }
            .to_string_lossy()
            .into_owned()
    })
}

fn read() -> Option<VmStructs> {
    let mut t = VmStructs::default();
    let base = exported(c"gHotSpotVMStructs")? as usize;
    let stride = exported(c"gHotSpotVMStructEntryArrayStride")? as usize;
    let type_name = exported(c"gHotSpotVMStructEntryTypeNameOffset")? as usize;
    let field_name = exported(c"gHotSpotVMStructEntryFieldNameOffset")? as usize;
    let is_static = exported(c"gHotSpotVMStructEntryIsStaticOffset")? as usize;
    let offset = exported(c"gHotSpotVMStructEntryOffsetOffset")? as usize;
    let address = exported(c"gHotSpotVMStructEntryAddressOffset")? as usize;
    if base == 0 || stride == 0 {
        return None;
    }
    let mut entry = base;
    loop {
        // SAFETY: the table libjvm exports, `stride` bytes per entry, ended by an entry whose
        // type name is null; the offsets are those it exports for the entry's fields.
        let (ty, name, field) = unsafe {
            let word = |at: usize| *((entry + at) as *const usize);
            let Some(ty) = string(word(type_name)) else {
                break;
            };
            let name = string(word(field_name)).unwrap_or_default();
            let field = Field {
                offset: *((entry + offset) as *const u64),
                address: word(address),
                is_static: *((entry + is_static) as *const i32) != 0,
            };
            (ty, name, field)
        };
        t.fields.insert((ty, name), field);
        entry += stride;
    }
    if let (Some(base), Some(stride), Some(type_name), Some(size)) = (
        exported(c"gHotSpotVMTypes"),
        exported(c"gHotSpotVMTypeEntryArrayStride"),
        exported(c"gHotSpotVMTypeEntryTypeNameOffset"),
        exported(c"gHotSpotVMTypeEntrySizeOffset"),
    ) {
        let (mut entry, stride) = (base as usize, stride as usize);
        while entry != 0 && stride != 0 {
            // SAFETY: the types table, laid out as the exported offsets say, null-name ended.
            let (ty, bytes) = unsafe {
                let Some(ty) = string(*((entry + type_name as usize) as *const usize)) else {
                    break;
                };
                (ty, *((entry + size as usize) as *const u64))
            };
            t.sizes.insert(ty, bytes);
            entry += stride;
        }
    }
    t.layout = t.find_code_layout();
    log::debug!(
        "VMStructs: {} fields, {} types",
        t.fields.len(),
        t.sizes.len()
    );
    Some(t)
}

impl VmStructs {
    fn field(&self, ty: &str, name: &str) -> Option<Field> {
        self.fields.get(&(ty.to_owned(), name.to_owned())).copied()
    }

    /// A field's offset into its object, as the `i32` the C side reads.
    fn offset(&self, ty: &str, name: &str) -> Option<i32> {
        self.field(ty, name)
            .filter(|f| !f.is_static)
            .and_then(|f| i32::try_from(f.offset).ok())
    }

    /// A static field's address.
    fn address(&self, ty: &str, name: &str) -> Option<usize> {
        self.field(ty, name)
            .filter(|f| f.is_static && f.address != 0)
            .map(|f| f.address)
    }

    /// The address of the value of the JVM flag `name` (`-XX:name`).
    fn flag(&self, name: &str) -> Option<*mut u8> {
        let table = self.address("JVMFlag", "flags")?;
        let count = self.address("JVMFlag", "numFlags")?;
        let size = *self.sizes.get("JVMFlag")? as usize;
        let name_at = self.offset("JVMFlag", "_name")? as usize;
        let addr_at = self.offset("JVMFlag", "_addr")? as usize;
        // SAFETY: static variables of libjvm: the flag table's address and its length.
        let (table, count) = unsafe { (*(table as *const usize), *(count as *const usize)) };
        if table == 0 || size == 0 {
            return None;
        }
        (0..count).find_map(|i| {
            let flag = table + i * size;
            // SAFETY: entry `i` of the flag table (`count` entries of `size` bytes; the last
            // ones may have a null name), its name a static C string and its value's address.
            unsafe {
                let flag_name = *((flag + name_at) as *const *const c_char);
                (!flag_name.is_null() && CStr::from_ptr(flag_name).to_bytes() == name.as_bytes())
                    .then(|| *((flag + addr_at) as *const *mut u8))
                    .filter(|p| !p.is_null())
            }
        })
    }

    /// Sets the boolean JVM flag `name`; its value before, `None` if this JVM has no such flag.
    pub fn set_bool_flag(&self, name: &str, value: bool) -> Option<bool> {
        let at = self.flag(name)?;
        // SAFETY: the flag's value, a C++ `bool` in libjvm's data; HotSpot reads it without a
        // lock (a compiler thread reads it at the start of each compilation).
        unsafe {
            let before = *at != 0;
            std::ptr::write_volatile(at, u8::from(value));
            Some(before)
        }
    }

    /// Where HotSpot keeps a method's compiled code and its bounds, if this JVM describes all of
    /// it: JDK 17's code blob holds its code's bounds as addresses (`_code_begin`, `_code_end`),
    /// JDK 25's as offsets from the blob (`_code_offset`, `_data_offset`).
    pub fn code_layout(&self) -> Option<CodeLayout> {
        self.layout
    }

    fn find_code_layout(&self) -> Option<CodeLayout> {
        let code_method = self
            .offset("nmethod", "_method")
            .or_else(|| self.offset("CompiledMethod", "_method"))?;
        let (code_begin, code_end, relative) = match (
            self.offset("CodeBlob", "_code_begin"),
            self.offset("CodeBlob", "_code_end"),
        ) {
            (Some(b), Some(e)) => (b, e, 0),
            _ => (
                self.offset("CodeBlob", "_code_offset")?,
                self.offset("CodeBlob", "_data_offset")?,
                1,
            ),
        };
        Some(CodeLayout {
            low_bound: self.address("CodeCache", "_low_bound")? as *const usize,
            high_bound: self.address("CodeCache", "_high_bound")? as *const usize,
            method_code: self.offset("Method", "_code")?,
            method_const: self.offset("Method", "_constMethod")?,
            const_constants: self.offset("ConstMethod", "_constants")?,
            pool_holder: self.offset("ConstantPool", "_pool_holder")?,
            osr_head: self.offset("InstanceKlass", "_osr_nmethods_head")?,
            osr_link: self.offset("nmethod", "_osr_link")?,
            code_method,
            code_begin,
            code_end,
            relative,
        })
    }

    /// The address range of the compiled code `method` (a `jmethodID` of a loaded class) has
    /// now, if any (its OSR compilations aside).
    pub fn code_range(&self, method: ferrofluid_jvmti::MethodId) -> Option<std::ops::Range<usize>> {
        let l = self.code_layout()?;
        // SAFETY: a jmethodID of a loaded class points at its `Method*` (null or a small sentinel
        // once the method is gone); its `_code` is null or a compiled method in the code cache,
        // which stays mapped (a blob freed meanwhile reads as stale bounds, not a fault).
        unsafe {
            let method = *(method.as_raw() as *const usize);
            if method < 4096 {
                return None;
            }
            let code = *((method + l.method_code as usize) as *const usize);
            if code == 0 {
                return None;
            }
            let at = |offset: i32| code + offset as usize;
            let (begin, end) = if l.relative != 0 {
                let rel = |o: i32| code.wrapping_add(*(at(o) as *const i32) as isize as usize);
                (rel(l.code_begin), rel(l.code_end))
            } else {
                (
                    *(at(l.code_begin) as *const usize),
                    *(at(l.code_end) as *const usize),
                )
            };
            Some(begin..end)
        }
    }

    /// Whether the method behind `method` (a `jmethodID`) has compiled code now.
    pub fn is_compiled(&self, method: ferrofluid_jvmti::MethodId) -> bool {
        let Some(code) = self.layout.map(|l| l.method_code) else {
            return false;
        };
        // SAFETY: a jmethodID of a loaded class points at its `Method*` (null or a small
        // sentinel once the method is gone); the method's `_code` word is read once.
        unsafe {
            let method = *(method.as_raw() as *const usize);
            method >= 4096 && *((method + code as usize) as *const usize) != 0
        }
    }
}

#[cfg(test)]
mod tests {
    /// No libjvm in a unit test's process: no tables, and nothing read.
    #[test]
    fn without_a_jvm_there_are_no_tables() {
        assert!(super::get().is_none());
    }
}
