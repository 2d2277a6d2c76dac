/* The JNI natives of NativeBench.java: tiny does nothing; upcalls calls NativeBench.up n times. */
#include <jni.h>

JNIEXPORT jint JNICALL Java_NativeBench_tiny(JNIEnv *env, jclass c, jint x) {
    return x + 1;
}

static jint JNICALL upcalls(JNIEnv *env, jclass c, jint n) {
    static jmethodID up;
    if (!up) up = (*env)->GetStaticMethodID(env, c, "up", "(I)I");
    jint s = 0;
    for (jint i = 0; i < n; i++) s += (*env)->CallStaticIntMethod(env, c, up, i);
    return s;
}

/* upcalls is bound with RegisterNatives, as libraries and the JDK do. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass c = (*env)->FindClass(env, "NativeBench");
    if (!c) return JNI_ERR;
    JNINativeMethod m = {"upcalls", "(I)I", (void *)upcalls};
    if ((*env)->RegisterNatives(env, c, &m, 1) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}
