/* The natives of NativeExact.java: busy-waits of known length, with upcalls in between. */
#include <jni.h>
#include <time.h>

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spins until `nanos` have passed on the clock; returns how long it spun, ns (more than
   `nanos` when the thread lost the CPU near the end: the measurement compares with this). */
static jlong spin_for(jlong nanos) {
    long long start = now(), end = start + nanos, t;
    while ((t = now()) < end) {
    }
    return t - start;
}

/* Does nothing: each thread calls it first, so that what a first native call costs (binding the
   profiler's hooks, its per-thread state) lies outside the timed calls. */
JNIEXPORT void JNICALL Java_NativeExact_warm(JNIEnv *env, jclass c) {
}

JNIEXPORT jlong JNICALL Java_NativeExact_spin(JNIEnv *env, jclass c, jlong nanos) {
    return spin_for(nanos);
}

/* Spins `nanos` in `upcalls + 1` equal parts, calling NativeExact.callback between them: the
   native time is the spinning alone, whatever the callbacks take. Returns how long it spun by its
   own clock, ns: the native time, measured where no JNI transition or scheduling outside the
   native's own code can enter it. */
static jlong JNICALL busy(JNIEnv *env, jclass c, jlong nanos, jint upcalls) {
    static jmethodID callback;
    jlong spun = 0;
    if (!callback) callback = (*env)->GetStaticMethodID(env, c, "callback", "(I)I");
    jlong part = nanos / (upcalls + 1);
    for (jint i = 0; i < upcalls; i++) {
        spun += spin_for(part);
        (*env)->CallStaticIntMethod(env, c, callback, i);
    }
    return spun + spin_for(nanos - part * upcalls);
}

/* busy is bound with RegisterNatives, as libraries and the JDK do. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass c = (*env)->FindClass(env, "NativeExact");
    if (!c) return JNI_ERR;
    JNINativeMethod m = {"busy", "(JI)J", (void *)busy};
    if ((*env)->RegisterNatives(env, c, &m, 1) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}
