/* Input of regenerate.sh: jvmti.h includes jni.h, which includes linux/jni_md.h. */
#include <jvmti.h>
