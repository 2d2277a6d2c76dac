/*
 * The smallest JVMTI agent under which the `native` probe's wrappers link, boot classes'
 * included: it sets the native method prefix and binds the wrapped natives of boot-loader
 * classes itself, as each class (or a subclass) is prepared, to the function HotSpot's own
 * lookup would find in libjava. A prefixed native's
 * first call otherwise makes HotSpot ask java.lang.ClassLoader.findNative before it retries
 * without the prefix, and natives called before ClassLoader is initialised cannot wait for that.
 *
 * With the option `count`, it also binds the natives of the generated ferrofluid/NativeHooks at
 * VMInit, sets its `active` field and counts each method id's nativeEnter0/nativeExit0 calls on
 * the main thread (the one that reaches VMInit), printed at VMDeath as "NATIVE id enters exits".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDS 65536
#define PREFIX "ferrofluid$$"

static long enters[IDS], exits[IDS];
static __thread int main_thread;
static void *libjava;

static void JNICALL native_enter0(JNIEnv *env, jclass c, jint id) {
    if (main_thread && (unsigned)id < IDS) enters[id]++;
}

static void JNICALL native_exit0(JNIEnv *env, jclass c, jint id) {
    if (main_thread && (unsigned)id < IDS) exits[id]++;
}

/* Appends the JNI mangling of `s` (up to `end`, or its end) to `out`. */
static void mangle(char *out, const char *s, const char *end) {
    char *o = out + strlen(out);
    for (; *s && s != end; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '/') *o++ = '_';
        else if (c == '_') o += sprintf(o, "_1");
        else if (c == ';') o += sprintf(o, "_2");
        else if (c == '[') o += sprintf(o, "_3");
        else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) *o++ = c;
        else o += sprintf(o, "_0%04x", c); /* ASCII only: boot natives need no more here */
    }
    *o = 0;
}

/* Binds the wrapped natives of boot class `c` found in libjava, by their original names. */
static void prebind(jvmtiEnv *jvmti, JNIEnv *env, jclass c) {
    jobject loader = NULL;
    char *class_sig = NULL;
    jint count = 0;
    jmethodID *methods = NULL;
    if ((*jvmti)->GetClassLoader(jvmti, c, &loader) != JVMTI_ERROR_NONE || loader) return;
    if ((*jvmti)->GetClassSignature(jvmti, c, &class_sig, NULL) != JVMTI_ERROR_NONE) return;
    if ((*jvmti)->GetClassMethods(jvmti, c, &count, &methods) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < count; i++) {
            jint mods;
            char *name, *sig;
            if ((*jvmti)->GetMethodModifiers(jvmti, methods[i], &mods) != JVMTI_ERROR_NONE ||
                !(mods & 0x0100))
                continue;
            if ((*jvmti)->GetMethodName(jvmti, methods[i], &name, &sig, NULL) != JVMTI_ERROR_NONE)
                continue;
            if (strncmp(name, PREFIX, strlen(PREFIX)) == 0) {
                const char *original = name + strlen(PREFIX);
                char jni[1024] = "Java_";
                /* class_sig is "Lpkg/Name;" */
                mangle(jni, class_sig + 1, class_sig + strlen(class_sig) - 1);
                strcat(jni, "_");
                mangle(jni, original, NULL);
                void *fn = dlsym(libjava, jni);
                if (!fn) {
                    strcat(jni, "__");
                    mangle(jni, sig + 1, strchr(sig, ')'));
                    fn = dlsym(libjava, jni);
                }
                if (fn) {
                    JNINativeMethod m = {(char *)original, sig, fn};
                    if ((*env)->RegisterNatives(env, c, &m, 1) != 0) (*env)->ExceptionClear(env);
                }
            }
            (*jvmti)->Deallocate(jvmti, (unsigned char *)name);
            (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
        }
        (*jvmti)->Deallocate(jvmti, (unsigned char *)methods);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)class_sig);
}

/* A class and its superclasses: those linked before VMStart (Object, Throwable...) get no
   ClassPrepare event of their own, but are reached from their subclasses'. */
static void JNICALL class_prepare(jvmtiEnv *jvmti, JNIEnv *env, jthread t, jclass c) {
    for (jclass k = c; k; k = (*env)->GetSuperclass(env, k)) prebind(jvmti, env, k);
}

static void JNICALL vm_init(jvmtiEnv *jvmti, JNIEnv *env, jthread thread) {
    main_thread = 1;
    jclass hooks = (*env)->FindClass(env, "ferrofluid/NativeHooks");
    if (!hooks) {
        fprintf(stderr, "prefix_agent: no ferrofluid/NativeHooks\n");
        return;
    }
    JNINativeMethod m[] = {
        {"nativeEnter0", "(I)V", (void *)native_enter0},
        {"nativeExit0", "(I)V", (void *)native_exit0},
    };
    jfieldID active = (*env)->GetStaticFieldID(env, hooks, "active", "I");
    if ((*env)->RegisterNatives(env, hooks, m, 2) != 0 || !active) {
        fprintf(stderr, "prefix_agent: cannot bind ferrofluid/NativeHooks\n");
        return;
    }
    (*env)->SetStaticIntField(env, hooks, active, 1);
}

static void JNICALL vm_death(jvmtiEnv *jvmti, JNIEnv *env) {
    for (int i = 0; i < IDS; i++)
        if (enters[i] || exits[i]) fprintf(stderr, "NATIVE %d %ld %ld\n", i, enters[i], exits[i]);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *jvmti;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
    char *home;
    if ((*jvmti)->GetSystemProperty(jvmti, "java.home", &home) != JVMTI_ERROR_NONE) return JNI_ERR;
    char path[4096];
    snprintf(path, sizeof path, "%s/lib/libjava.so", home);
    /* Loaded by the JVM before any agent runs; not again here. */
    libjava = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!libjava) libjava = dlopen(path, RTLD_LAZY);
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_set_native_method_prefix = 1;
    caps.can_generate_early_vmstart = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
    if ((*jvmti)->SetNativeMethodPrefix(jvmti, PREFIX) != JVMTI_ERROR_NONE) return JNI_ERR;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.ClassPrepare = class_prepare;
    cb.VMInit = vm_init;
    cb.VMDeath = vm_death;
    (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
    /* Enabled here: ClassPrepare events of the start phase are posted only if enabled before. */
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, NULL);
    if (options && strcmp(options, "count") == 0) {
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
    }
    return JNI_OK;
}
