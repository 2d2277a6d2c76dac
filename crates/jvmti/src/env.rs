//! `Jvmti`: the JVMTI environment and the calls the agent makes on it.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null_mut, NonNull};

use crate::buf::JvmtiBuf;
use crate::error::{check, Error, Result};
use crate::jni::JniEnv;
use crate::refs::{Class, FieldId, MethodId, Object};
use crate::sys;

/// Calls a JVMTI function through the environment's table, turning its `jvmtiError` into `Result<()>`
/// that names the function. Must be used inside an `unsafe` block whose SAFETY comment covers the
/// arguments.
macro_rules! jvmti {
    ($self:expr, $name:ident ( $($arg:expr),* $(,)? )) => {{
        let env = $self.raw.as_ptr();
        match (**env).$name {
            Some(f) => check(stringify!($name), f(env, $($arg),*)),
            None => Err(Error::Jvmti { function: stringify!($name), code: sys::JVMTI_ERROR_NOT_AVAILABLE }),
        }
    }};
}

/// A JVMTI environment. JVMTI environments may be used from any thread (Java or not) for the calls
/// that take no JNI references, so this is `Copy + Send + Sync`; calls that hand out or take local
/// references require a [`JniEnv`] of the current thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jvmti {
    raw: NonNull<sys::jvmtiEnv>,
}

// SAFETY: the JVMTI specification allows an environment to be used from any thread.
unsafe impl Send for Jvmti {}
// SAFETY: as above; the JVM synchronises internally.
unsafe impl Sync for Jvmti {}

/// The name and signature of a method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodName {
    pub name: String,
    /// JVM descriptor, e.g. `(I)Ljava/lang/String;`.
    pub signature: String,
}

/// A field a class declares, as `GetClassFields`, `GetFieldName` and `GetFieldModifiers` say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub id: FieldId,
    pub name: String,
    /// Type descriptor, e.g. `Ljava/lang/Object;`.
    pub signature: String,
    pub is_static: bool,
}

impl Field {
    /// Whether the field holds a reference (an object or an array).
    pub fn is_reference(&self) -> bool {
        matches!(self.signature.as_bytes().first(), Some(b'L' | b'['))
    }
}

/// What `GetThreadInfo` says about a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    pub name: String,
    pub priority: i32,
    pub is_daemon: bool,
}

/// A class and its new bytes, for `RedefineClasses`.
#[derive(Debug, Clone, Copy)]
pub struct ClassDefinition<'a, 'b> {
    pub class: Class<'a>,
    pub bytes: &'b [u8],
}

/// The body of a JVMTI agent thread.
pub type AgentThreadFn = unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut sys::JNIEnv, *mut c_void);

impl Jvmti {
    /// # Safety
    /// `raw` must be a live JVMTI environment (from `GetEnv`), not disposed while this value is used.
    pub unsafe fn from_raw(raw: *mut sys::jvmtiEnv) -> Option<Self> {
        NonNull::new(raw).map(|raw| Jvmti { raw })
    }

    pub fn as_raw(self) -> *mut sys::jvmtiEnv {
        self.raw.as_ptr()
    }

    /// The current phase (`JVMTI_PHASE_ONLOAD`, `_LIVE`...).
    pub fn phase(self) -> Result<sys::jvmtiPhase> {
        let mut phase = 0;
        // SAFETY: one out-pointer.
        unsafe { jvmti!(self, GetPhase(&mut phase)) }?;
        Ok(phase)
    }

    /// The capabilities this JVM could grant now.
    pub fn potential_capabilities(self) -> Result<sys::jvmtiCapabilities> {
        let mut caps = sys::jvmtiCapabilities::default();
        // SAFETY: one out-pointer to a capabilities struct.
        unsafe { jvmti!(self, GetPotentialCapabilities(&mut caps)) }?;
        Ok(caps)
    }

    /// The capabilities this environment holds.
    pub fn capabilities(self) -> Result<sys::jvmtiCapabilities> {
        let mut caps = sys::jvmtiCapabilities::default();
        // SAFETY: one out-pointer to a capabilities struct.
        unsafe { jvmti!(self, GetCapabilities(&mut caps)) }?;
        Ok(caps)
    }

    pub fn add_capabilities(self, caps: &sys::jvmtiCapabilities) -> Result<()> {
        // SAFETY: the JVM only reads the struct.
        unsafe { jvmti!(self, AddCapabilities(caps)) }
    }

    pub fn relinquish_capabilities(self, caps: &sys::jvmtiCapabilities) -> Result<()> {
        // SAFETY: the JVM only reads the struct.
        unsafe { jvmti!(self, RelinquishCapabilities(caps)) }
    }

    /// Installs the callbacks (the JVM copies the struct; unset entries are null).
    pub fn set_event_callbacks(self, callbacks: &sys::jvmtiEventCallbacks) -> Result<()> {
        let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as sys::jint;
        // SAFETY: pointer and exact size of a callbacks struct; the JVM copies it.
        unsafe { jvmti!(self, SetEventCallbacks(callbacks, size)) }
    }

    /// Enables or disables `event` globally.
    pub fn set_event_notification_mode(self, enable: bool, event: sys::jvmtiEvent) -> Result<()> {
        let mode = if enable {
            sys::JVMTI_ENABLE
        } else {
            sys::JVMTI_DISABLE
        };
        // SAFETY: integer arguments and a null thread (= all threads); the function is variadic in C
        // but takes no extra arguments for any defined event.
        unsafe { jvmti!(self, SetEventNotificationMode(mode, event, null_mut())) }
    }

    /// All loaded classes (local references in the caller's frame).
    pub fn loaded_classes<'a>(self, _env: &JniEnv<'a>) -> Result<JvmtiBuf<Class<'a>>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: two out-pointers; the thread is a Java thread (we hold its JniEnv).
        unsafe { jvmti!(self, GetLoadedClasses(&mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` jclass local refs; Class is repr(transparent) over jclass.
        Ok(unsafe { JvmtiBuf::from_raw(self, ptr.cast::<Class<'a>>(), n as usize) })
    }

    /// `(signature, generic signature)` of a class, e.g. `("Ljava/lang/String;", None)`.
    pub fn class_signature(self, class: Class<'_>) -> Result<(String, Option<String>)> {
        let (mut sig, mut generic) = (null_mut(), null_mut());
        // SAFETY: live class reference and two out-pointers.
        unsafe {
            jvmti!(
                self,
                GetClassSignature(class.as_raw(), &mut sig, &mut generic)
            )
        }?;
        let sig = self.take_string(sig);
        let generic = (!generic.is_null()).then(|| self.take_string(generic));
        Ok((sig, generic))
    }

    /// The methods a class declares (the class must be prepared).
    pub fn class_methods(self, class: Class<'_>) -> Result<JvmtiBuf<MethodId>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: live class reference and two out-pointers.
        unsafe { jvmti!(self, GetClassMethods(class.as_raw(), &mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` jmethodIDs; MethodId is repr(transparent).
        Ok(unsafe { JvmtiBuf::from_raw(self, ptr.cast::<MethodId>(), n as usize) })
    }

    /// The fields a class declares, not those it inherits (the class must be prepared).
    pub fn fields(self, class: Class<'_>) -> Result<Vec<Field>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: live class reference and two out-pointers.
        unsafe { jvmti!(self, GetClassFields(class.as_raw(), &mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` jfieldIDs; FieldId is repr(transparent).
        let ids = unsafe { JvmtiBuf::from_raw(self, ptr.cast::<FieldId>(), n as usize) };
        let mut fields = Vec::with_capacity(ids.len());
        for &id in ids.iter() {
            let (mut name, mut sig, mut modifiers) = (null_mut(), null_mut(), 0);
            // SAFETY: the class's own field ID; the generic-signature out-pointer may be null.
            unsafe {
                jvmti!(
                    self,
                    GetFieldName(class.as_raw(), id.as_raw(), &mut name, &mut sig, null_mut())
                )
            }?;
            let (name, signature) = (self.take_string(name), self.take_string(sig));
            // SAFETY: as above, and one out-pointer.
            unsafe {
                jvmti!(
                    self,
                    GetFieldModifiers(class.as_raw(), id.as_raw(), &mut modifiers)
                )
            }?;
            fields.push(Field {
                id,
                name,
                signature,
                is_static: modifiers & 0x0008 != 0,
            });
        }
        Ok(fields)
    }

    /// The bytecode of a method (capability `can_get_bytecodes`), constant-pool indexes as in
    /// [`Jvmti::constant_pool`] of its class.
    pub fn bytecodes(self, method: MethodId) -> Result<JvmtiBuf<u8>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: a live method ID and two out-pointers.
        unsafe { jvmti!(self, GetBytecodes(method.as_raw(), &mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` bytes for us.
        Ok(unsafe { JvmtiBuf::from_raw(self, ptr, n as usize) })
    }

    /// The constant pool of a class (capability `can_get_constant_pool`): its
    /// `constant_pool_count` and the entries in class-file format (JVMS 4.4).
    pub fn constant_pool(self, class: Class<'_>) -> Result<(u16, JvmtiBuf<u8>)> {
        let (mut count, mut n, mut ptr) = (0, 0, null_mut());
        // SAFETY: a live class reference and three out-pointers.
        unsafe {
            jvmti!(
                self,
                GetConstantPool(class.as_raw(), &mut count, &mut n, &mut ptr)
            )
        }?;
        // SAFETY: JVMTI allocated `n` bytes for us.
        let bytes = unsafe { JvmtiBuf::from_raw(self, ptr, n as usize) };
        Ok((u16::try_from(count).unwrap_or(0), bytes))
    }

    pub fn method_name(self, method: MethodId) -> Result<MethodName> {
        let (mut name, mut sig) = (null_mut(), null_mut());
        // SAFETY: a live method ID; the generic-signature out-pointer may be null per the spec.
        unsafe {
            jvmti!(
                self,
                GetMethodName(method.as_raw(), &mut name, &mut sig, null_mut())
            )
        }?;
        Ok(MethodName {
            name: self.take_string(name),
            signature: self.take_string(sig),
        })
    }

    pub fn method_declaring_class<'a>(
        self,
        _env: &JniEnv<'a>,
        method: MethodId,
    ) -> Result<Class<'a>> {
        let mut class = null_mut();
        // SAFETY: a live method ID and one out-pointer; on a Java thread.
        unsafe { jvmti!(self, GetMethodDeclaringClass(method.as_raw(), &mut class)) }?;
        // SAFETY: the JVM returned a local reference to the declaring class.
        Ok(unsafe { Class::from_raw(class) })
    }

    /// The internal name (`java/lang/String`) of the class declaring `method`; the local
    /// reference to the class is deleted before returning.
    pub fn method_class_name(self, env: &JniEnv<'_>, method: MethodId) -> Result<String> {
        let class = self.method_declaring_class(env, method)?;
        let signature = self.class_signature(class).map(|(s, _)| s);
        env.delete_local_ref(class.as_object());
        let signature = signature?;
        // A declaring class is never an array or a primitive: its signature is `Lname;`.
        Ok(signature
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .map_or_else(|| signature.clone(), str::to_owned))
    }

    /// `GetJNIFunctionTable`: a copy of the JNI function table in effect, allocated by JVMTI.
    pub fn jni_function_table(self) -> Result<JvmtiBuf<sys::JNINativeInterface_>> {
        let mut table = null_mut();
        // SAFETY: one out-pointer; JVMTI allocates the copy.
        unsafe { jvmti!(self, GetJNIFunctionTable(&mut table)) }?;
        // SAFETY: one table allocated by JVMTI (the type is the bindings' `jniNativeInterface`).
        Ok(unsafe { JvmtiBuf::from_raw(self, table.cast(), 1) })
    }

    /// `SetJNIFunctionTable`: the JVM copies `table` into the table every JNIEnv uses.
    ///
    /// # Safety
    /// Every function in `table` must have the JNI signature of its slot and stay callable for the
    /// rest of the JVM's life (threads may be inside one when the table changes again).
    pub unsafe fn set_jni_function_table(self, table: &sys::JNINativeInterface_) -> Result<()> {
        // SAFETY: a complete table; the caller vouches for its functions.
        unsafe { jvmti!(self, SetJNIFunctionTable(table)) }
    }

    pub fn is_modifiable_class(self, class: Class<'_>) -> Result<bool> {
        let mut b = 0;
        // SAFETY: live class reference and one out-pointer.
        unsafe { jvmti!(self, IsModifiableClass(class.as_raw(), &mut b)) }?;
        Ok(b != 0)
    }

    /// The object's identity hash code (`System.identityHashCode`'s value), set on first use
    /// and never changed: the same object always gives the same hash.
    pub fn object_hash_code(self, object: Object<'_>) -> Result<i32> {
        let mut hash = 0;
        // SAFETY: a live object reference and one out-pointer.
        unsafe { jvmti!(self, GetObjectHashCode(object.as_raw(), &mut hash)) }?;
        Ok(hash)
    }

    /// The class's `JVMTI_CLASS_STATUS_*` bits (verified, prepared, initialized, error, ...).
    pub fn class_status(self, class: Class<'_>) -> Result<i32> {
        let mut status = 0;
        // SAFETY: live class reference and one out-pointer.
        unsafe { jvmti!(self, GetClassStatus(class.as_raw(), &mut status)) }?;
        Ok(status)
    }

    /// Re-runs the ClassFileLoadHook for these classes (needs `can_retransform_classes`).
    pub fn retransform_classes(self, classes: &[Class<'_>]) -> Result<()> {
        let n = classes.len() as sys::jint;
        // SAFETY: `classes` is n live class references laid out as jclass (repr(transparent)).
        unsafe { jvmti!(self, RetransformClasses(n, classes.as_ptr().cast())) }
    }

    /// Replaces the bytes of classes (needs `can_redefine_classes`).
    pub fn redefine_classes(self, defs: &[ClassDefinition<'_, '_>]) -> Result<()> {
        let raw: Vec<sys::jvmtiClassDefinition> = defs
            .iter()
            .map(|d| sys::jvmtiClassDefinition {
                klass: d.class.as_raw(),
                class_byte_count: d.bytes.len() as sys::jint,
                class_bytes: d.bytes.as_ptr(),
            })
            .collect();
        // SAFETY: `raw` points at live classes and byte slices that outlive the call.
        unsafe { jvmti!(self, RedefineClasses(raw.len() as sys::jint, raw.as_ptr())) }
    }

    /// Appends a jar to the boot class path (in the live phase: jars only).
    pub fn add_to_bootstrap_class_loader_search(self, path: &str) -> Result<()> {
        let c = cstring("AddToBootstrapClassLoaderSearch", path)?;
        // SAFETY: NUL-terminated path that outlives the call.
        unsafe { jvmti!(self, AddToBootstrapClassLoaderSearch(c.as_ptr())) }
    }

    /// All modules of the VM (local references).
    pub fn all_modules<'a>(self, _env: &JniEnv<'a>) -> Result<JvmtiBuf<Object<'a>>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: two out-pointers; on a Java thread.
        unsafe { jvmti!(self, GetAllModules(&mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` module references; Object is repr(transparent).
        Ok(unsafe { JvmtiBuf::from_raw(self, ptr.cast::<Object<'a>>(), n as usize) })
    }

    /// Makes `module` read `other` (so java.base classes can call the hooks class).
    pub fn add_module_reads(self, module: Object<'_>, other: Object<'_>) -> Result<()> {
        // SAFETY: two live module references.
        unsafe { jvmti!(self, AddModuleReads(module.as_raw(), other.as_raw())) }
    }

    /// Makes `module` export package `package` (dotted, `a.b`) to `to`.
    pub fn add_module_exports(
        self,
        module: Object<'_>,
        package: &str,
        to: Object<'_>,
    ) -> Result<()> {
        let c = cstring("AddModuleExports", package)?;
        // SAFETY: two live module references and a NUL-terminated name that outlives the call.
        unsafe {
            jvmti!(
                self,
                AddModuleExports(module.as_raw(), c.as_ptr(), to.as_raw())
            )
        }
    }

    /// The defining loader of `class`: `None` for the bootstrap loader.
    pub fn class_loader<'a>(
        self,
        _env: &JniEnv<'a>,
        class: Class<'_>,
    ) -> Result<Option<Object<'a>>> {
        let mut loader = null_mut();
        // SAFETY: live class reference and one out-pointer; on a Java thread.
        unsafe { jvmti!(self, GetClassLoader(class.as_raw(), &mut loader)) }?;
        // SAFETY: a non-null result is a local reference to the loader.
        Ok(unsafe { Object::from_nullable(loader) })
    }

    /// The tag of `object` (0: untagged). Needs `can_tag_objects`.
    pub fn tag(self, object: Object<'_>) -> Result<i64> {
        let mut tag = 0;
        // SAFETY: live reference and one out-pointer.
        unsafe { jvmti!(self, GetTag(object.as_raw(), &mut tag)) }?;
        Ok(tag)
    }

    /// Tags `object` (0 removes the tag). Needs `can_tag_objects`.
    pub fn set_tag(self, object: Object<'_>, tag: i64) -> Result<()> {
        // SAFETY: live reference.
        unsafe { jvmti!(self, SetTag(object.as_raw(), tag)) }
    }

    /// Sets the prefix for wrapping native methods (needs `can_set_native_method_prefix`).
    pub fn set_native_method_prefix(self, prefix: &str) -> Result<()> {
        let c = cstring("SetNativeMethodPrefix", prefix)?;
        // SAFETY: NUL-terminated string; the JVM copies it.
        unsafe { jvmti!(self, SetNativeMethodPrefix(c.as_ptr())) }
    }

    /// A raw monitor named `name` (destroyed when the returned value drops).
    pub fn create_raw_monitor(self, name: &str) -> Result<crate::RawMonitor> {
        let c = cstring("CreateRawMonitor", name)?;
        let mut id = null_mut();
        // SAFETY: NUL-terminated name and one out-pointer.
        unsafe { jvmti!(self, CreateRawMonitor(c.as_ptr(), &mut id)) }?;
        // SAFETY: a freshly created monitor of this environment, owned by nobody else.
        Ok(unsafe { crate::RawMonitor::from_raw(self, id) })
    }

    /// The current thread (a local reference).
    pub fn current_thread<'a>(self, _env: &JniEnv<'a>) -> Result<Object<'a>> {
        let mut t = null_mut();
        // SAFETY: one out-pointer; on a Java thread.
        unsafe { jvmti!(self, GetCurrentThread(&mut t)) }?;
        // SAFETY: the JVM returned a live local thread reference.
        Ok(unsafe { Object::from_raw(t) })
    }

    /// Name, priority and daemon flag of `thread`.
    pub fn thread_info(self, env: &JniEnv<'_>, thread: Object<'_>) -> Result<ThreadInfo> {
        let mut info = sys::jvmtiThreadInfo {
            name: null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: null_mut(),
            context_class_loader: null_mut(),
        };
        // SAFETY: live thread reference and an out-struct.
        unsafe { jvmti!(self, GetThreadInfo(thread.as_raw(), &mut info)) }?;
        for r in [info.thread_group, info.context_class_loader] {
            if !r.is_null() {
                // SAFETY: GetThreadInfo returned these as local references of this thread.
                env.delete_local_ref(unsafe { Object::from_raw(r) });
            }
        }
        Ok(ThreadInfo {
            name: self.take_string(info.name),
            priority: info.priority,
            is_daemon: info.is_daemon != 0,
        })
    }

    /// Every live thread (local references in the caller's frame).
    pub fn all_threads<'a>(self, _env: &JniEnv<'a>) -> Result<JvmtiBuf<Object<'a>>> {
        let (mut n, mut ptr) = (0, null_mut());
        // SAFETY: two out-pointers; the thread is a Java thread (we hold its JniEnv).
        unsafe { jvmti!(self, GetAllThreads(&mut n, &mut ptr)) }?;
        // SAFETY: JVMTI allocated `n` jthread local refs; Object is repr(transparent) over jobject.
        Ok(unsafe { JvmtiBuf::from_raw(self, ptr.cast::<Object<'a>>(), n as usize) })
    }

    /// `GetThreadState`: the `JVMTI_THREAD_STATE_*` bits of `thread`.
    pub fn thread_state(self, thread: Object<'_>) -> Result<i32> {
        let mut state = 0;
        // SAFETY: live thread reference and one out-pointer.
        unsafe { jvmti!(self, GetThreadState(thread.as_raw(), &mut state)) }?;
        Ok(state)
    }

    /// The method on top of `thread`'s stack, `None` for an empty stack.
    pub fn top_frame(self, thread: Object<'_>) -> Result<Option<MethodId>> {
        let mut frame = sys::jvmtiFrameInfo::default();
        let mut count = 0;
        // SAFETY: live thread reference, a buffer of one frame and one out-pointer.
        unsafe {
            jvmti!(
                self,
                GetStackTrace(thread.as_raw(), 0, 1, &mut frame, &mut count)
            )
        }?;
        // SAFETY: a method ID the JVM just returned for a frame of a live thread.
        Ok((count > 0 && !frame.method.is_null())
            .then(|| unsafe { MethodId::from_raw(frame.method) }))
    }

    /// CPU time of the current thread in nanoseconds (needs `can_get_current_thread_cpu_time`).
    pub fn current_thread_cpu_time(self) -> Result<i64> {
        let mut ns = 0;
        // SAFETY: one out-pointer.
        unsafe { jvmti!(self, GetCurrentThreadCpuTime(&mut ns)) }?;
        Ok(ns)
    }

    /// CPU time of `thread` in nanoseconds (needs `can_get_thread_cpu_time`).
    pub fn thread_cpu_time(self, thread: Object<'_>) -> Result<i64> {
        let mut ns = 0;
        // SAFETY: live thread reference and one out-pointer.
        unsafe { jvmti!(self, GetThreadCpuTime(thread.as_raw(), &mut ns)) }?;
        Ok(ns)
    }

    /// `len` bytes from the JVMTI allocator (what ClassFileLoadHook's `new_class_data` must be).
    pub fn allocate(self, len: usize) -> Result<JvmtiBuf<u8>> {
        let mut p = null_mut();
        // SAFETY: one out-pointer.
        unsafe { jvmti!(self, Allocate(len as sys::jlong, &mut p)) }?;
        // SAFETY: zero the fresh memory so the buffer holds initialized bytes, then own it.
        unsafe {
            std::ptr::write_bytes(p, 0, len);
            Ok(JvmtiBuf::from_raw(self, p, len))
        }
    }

    /// A copy of `bytes` in JVMTI memory.
    pub fn allocate_copy(self, bytes: &[u8]) -> Result<JvmtiBuf<u8>> {
        let mut buf = self.allocate(bytes.len())?;
        buf.copy_from_slice(bytes);
        Ok(buf)
    }

    pub(crate) fn deallocate_raw(self, p: *mut u8) -> Result<()> {
        // SAFETY: callers pass memory from this environment's Allocate, exactly once.
        unsafe { jvmti!(self, Deallocate(p)) }
    }

    /// A VM system property (`java.vm.version`...).
    pub fn system_property(self, name: &str) -> Result<String> {
        let c = cstring("GetSystemProperty", name)?;
        let mut value = null_mut();
        // SAFETY: NUL-terminated name and one out-pointer.
        unsafe { jvmti!(self, GetSystemProperty(c.as_ptr(), &mut value)) }?;
        Ok(self.take_string(value))
    }

    /// Starts `thread` (an unstarted `java.lang.Thread`) as a JVMTI agent thread running `body(arg)`.
    ///
    /// # Safety
    /// `body` must be sound to call with `arg` on another thread, and catch its own panics.
    pub unsafe fn run_agent_thread(
        self,
        thread: Object<'_>,
        body: AgentThreadFn,
        arg: *const c_void,
        priority: i32,
    ) -> Result<()> {
        // SAFETY: caller's contract for body/arg; `thread` is a live unstarted Thread.
        unsafe {
            jvmti!(
                self,
                RunAgentThread(thread.as_raw(), Some(body), arg, priority)
            )
        }
    }

    /// Disposes the environment: its capabilities are relinquished and its events disabled.
    pub fn dispose(self) -> Result<()> {
        // SAFETY: the environment is live; `self` is consumed, though copies may exist: using them
        // afterwards returns JVMTI_ERROR_INVALID_ENVIRONMENT at worst (HotSpot keeps the memory).
        unsafe { jvmti!(self, DisposeEnvironment()) }
    }

    /// Copies and deallocates a JVMTI-allocated C string (modified UTF-8, decoded lossily).
    fn take_string(self, p: *mut c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI returned a NUL-terminated string it allocated.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        let _ = self.deallocate_raw(p.cast());
        s
    }
}

fn cstring(function: &'static str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::Nul { function })
}
