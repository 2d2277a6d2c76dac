/* The natives of tests/java/NativeTarget.java. */
#include <jni.h>

JNIEXPORT jlong JNICALL Java_NativeTarget_add(JNIEnv *env, jclass c, jint a, jlong b) {
    return a + b;
}

JNIEXPORT jstring JNICALL Java_NativeTarget_echo(JNIEnv *env, jclass c, jstring s) {
    return s;
}

JNIEXPORT void JNICALL Java_NativeTarget_fail(JNIEnv *env, jclass c, jstring msg) {
    jclass e = (*env)->FindClass(env, "java/lang/IllegalStateException");
    const char *text = (*env)->GetStringUTFChars(env, msg, NULL);
    if (e && text) (*env)->ThrowNew(env, e, text);
    if (text) (*env)->ReleaseStringUTFChars(env, msg, text);
}

JNIEXPORT jint JNICALL Java_NativeTarget_callBack(JNIEnv *env, jclass c, jint n) {
    jmethodID twice = (*env)->GetStaticMethodID(env, c, "twice", "(I)I");
    jint sum = 0;
    for (jint i = 0; twice && i < n; i++) sum += (*env)->CallStaticIntMethod(env, c, twice, i);
    return sum;
}

static jdouble JNICALL scale(JNIEnv *env, jclass c, jdouble x, jfloat f) {
    return x * f;
}

static jdouble JNICALL scale_twice(JNIEnv *env, jclass c, jdouble x, jfloat f) {
    return 2 * x * f;
}

static jint JNICALL bump(JNIEnv *env, jobject self) {
    jclass thread = (*env)->FindClass(env, "java/lang/Thread");
    jmethodID holds = (*env)->GetStaticMethodID(env, thread, "holdsLock", "(Ljava/lang/Object;)Z");
    if (!(*env)->CallStaticBooleanMethod(env, thread, holds, self)) return -1000000;
    jfieldID count = (*env)->GetFieldID(env, (*env)->GetObjectClass(env, self), "count", "I");
    jint n = (*env)->GetIntField(env, self, count) + 1;
    (*env)->SetIntField(env, self, count, n);
    return n;
}

static void JNICALL rebind(JNIEnv *env, jclass c) {
    JNINativeMethod m = {"scale", "(DF)D", (void *)scale_twice};
    (*env)->RegisterNatives(env, c, &m, 1);
}

/* scale, bump and rebind are bound with RegisterNatives under their own names, as the JDK
   and libraries do: with the natives wrapped, the JVM binds the prefixed ones. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass c = (*env)->FindClass(env, "NativeTarget");
    if (!c) return JNI_ERR;
    JNINativeMethod m[] = {
        {"scale", "(DF)D", (void *)scale},
        {"bump", "()I", (void *)bump},
        {"rebind", "()V", (void *)rebind},
    };
    if ((*env)->RegisterNatives(env, c, m, 3) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}
