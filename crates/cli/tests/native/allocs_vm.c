/* The JNI allocations of AllocsVm.java: one object or array per call. */
#include <jni.h>

JNIEXPORT jobject JNICALL Java_AllocsVm_allocObject(JNIEnv *env, jclass self, jclass c) {
    return (*env)->AllocObject(env, c);
}

JNIEXPORT jobject JNICALL Java_AllocsVm_newObject(JNIEnv *env, jclass self, jclass c) {
    jmethodID init = (*env)->GetMethodID(env, c, "<init>", "(I)V");
    return init ? (*env)->NewObject(env, c, init, (jint)7) : NULL;
}

JNIEXPORT jobject JNICALL Java_AllocsVm_newObjectA(JNIEnv *env, jclass self, jclass c) {
    jmethodID init = (*env)->GetMethodID(env, c, "<init>", "(I)V");
    jvalue arg;
    arg.i = 7;
    return init ? (*env)->NewObjectA(env, c, init, &arg) : NULL;
}

JNIEXPORT jobject JNICALL Java_AllocsVm_newObjectArray(JNIEnv *env, jclass self, jint n, jclass c) {
    return (*env)->NewObjectArray(env, n, c, NULL);
}

JNIEXPORT jobject JNICALL Java_AllocsVm_newIntArray(JNIEnv *env, jclass self, jint n) {
    return (*env)->NewIntArray(env, n);
}

JNIEXPORT jobject JNICALL Java_AllocsVm_newStringUtf(JNIEnv *env, jclass self) {
    return (*env)->NewStringUTF(env, "native");
}
