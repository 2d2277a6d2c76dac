/* A JNI native that does nothing: what remains is the JNI transition. */
#include <jni.h>
JNIEXPORT void JNICALL Java_Levels_probe(JNIEnv *env, jclass c, jint id) { (void)env; (void)c; (void)id; }
JNIEXPORT void JNICALL Java_NanoLevels_probe(JNIEnv *env, jclass c, jint id) { (void)env; (void)c; (void)id; }
