/* Nat.callback(k): calls Nat.back(k) through JNI, as a native library calling into Java does. */
#include <jni.h>

JNIEXPORT void JNICALL Java_Nat_callback(JNIEnv *env, jclass cls, jint k) {
    jmethodID back = (*env)->GetStaticMethodID(env, cls, "back", "(I)V");
    if (back != NULL) {
        (*env)->CallStaticVoidMethod(env, cls, back, k);
    }
}
