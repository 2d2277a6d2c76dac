/*
 * A measuring stick for native-method wrappers, not ferrofluid's agent: sets the JVMTI native
 * method prefix so that statically wrapped natives link, and (with the `jni` option) wraps the
 * JNI CallStaticIntMethod* functions. Exports the natives of the `native` hooks variant
 * (bench/native/hooks/native): IPA's transitions kept in C thread-local state with the TSC.
 * At VMDeath prints what the main thread measured.
 *
 *   -agentpath:libstick.so[=jni]
 */
#include <jni.h>
#include <jvmti.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#define MAX_IDS 4096
#define MAX_DEPTH 256

struct state {
    unsigned long long last, native, bytecode, upcalls;
    int depth;
    int stack[MAX_DEPTH];
    unsigned long long calls[MAX_IDS], ns[MAX_IDS];
};

static __thread struct state *tls;

static struct state *state(void) {
    struct state *s = tls;
    if (__builtin_expect(s == NULL, 0)) {
        s = calloc(1, sizeof *s);
        s->last = __rdtsc();
        tls = s;
    }
    return s;
}

JNIEXPORT void JNICALL Java_ferrofluid_Hooks_nativeEnter(JNIEnv *env, jclass c, jint id) {
    struct state *s = state();
    unsigned long long t = __rdtsc();
    s->bytecode += t - s->last;
    s->last = t;
    if ((unsigned)id < MAX_IDS) s->calls[id]++;
    if (s->depth < MAX_DEPTH) s->stack[s->depth] = id;
    s->depth++;
}

JNIEXPORT void JNICALL Java_ferrofluid_Hooks_nativeExit(JNIEnv *env, jclass c, jint id) {
    struct state *s = state();
    unsigned long long t = __rdtsc();
    s->native += t - s->last;
    if ((unsigned)id < MAX_IDS) s->ns[id] += t - s->last;
    s->last = t;
    if (s->depth > 0) s->depth--;
}

/* Native to bytecode: the time since the last transition was the current native's. */
static void n2j_begin(void) {
    struct state *s = state();
    unsigned long long t = __rdtsc();
    s->native += t - s->last;
    if (s->depth > 0 && s->depth <= MAX_DEPTH && (unsigned)s->stack[s->depth - 1] < MAX_IDS)
        s->ns[s->stack[s->depth - 1]] += t - s->last;
    s->last = t;
    s->upcalls++;
}

static void n2j_end(void) {
    struct state *s = state();
    unsigned long long t = __rdtsc();
    s->bytecode += t - s->last;
    s->last = t;
}

static struct JNINativeInterface_ *original;

static jint JNICALL call_static_int_v(JNIEnv *env, jclass c, jmethodID m, va_list args) {
    n2j_begin();
    jint r = original->CallStaticIntMethodV(env, c, m, args);
    n2j_end();
    return r;
}

static jint JNICALL call_static_int_a(JNIEnv *env, jclass c, jmethodID m, const jvalue *args) {
    n2j_begin();
    jint r = original->CallStaticIntMethodA(env, c, m, args);
    n2j_end();
    return r;
}

static jint JNICALL call_static_int(JNIEnv *env, jclass c, jmethodID m, ...) {
    va_list args;
    va_start(args, m);
    jint r = call_static_int_v(env, c, m, args);
    va_end(args);
    return r;
}

static int wrap_jni;

static void JNICALL vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
    if (!wrap_jni) return;
    jniNativeInterface *table;
    if ((*jvmti)->GetJNIFunctionTable(jvmti, &table) != JVMTI_ERROR_NONE) return;
    original = malloc(sizeof *original);
    memcpy(original, table, sizeof *original);
    table->CallStaticIntMethod = call_static_int;
    table->CallStaticIntMethodV = call_static_int_v;
    table->CallStaticIntMethodA = call_static_int_a;
    (*jvmti)->SetJNIFunctionTable(jvmti, table);
    (*jvmti)->Deallocate(jvmti, (unsigned char *)table);
}

static void JNICALL vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
    struct state *s = tls;
    if (!s) return;
    unsigned long long calls = 0;
    for (int i = 0; i < MAX_IDS; i++) calls += s->calls[i];
    fprintf(stderr, "STICK native_ticks %llu bytecode_ticks %llu native_calls %llu upcalls %llu\n",
            s->native, s->bytecode, calls, s->upcalls);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *jvmti;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    wrap_jni = options && strstr(options, "jni") != NULL;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_set_native_method_prefix = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
    if ((*jvmti)->SetNativeMethodPrefix(jvmti, "ferrofluid$$") != JVMTI_ERROR_NONE) return JNI_ERR;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.VMInit = vm_init;
    cb.VMDeath = vm_death;
    (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    return JNI_OK;
}
