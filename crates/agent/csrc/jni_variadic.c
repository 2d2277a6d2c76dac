/* The variadic JNI functions the agent wraps (Call<Type>Method, CallNonvirtual<Type>Method,
 * CallStatic<Type>Method, NewObject). Stable Rust cannot define a C-variadic function, so each
 * wrapper here turns its arguments into a va_list and calls the va_list variant ("...V") of the
 * table currently installed, which is the agent's Rust wrapper of that variant: the revelation
 * check lives there, once. Slot numbers are the JNI specification's function table indices
 * (checked against the Rust bindings by a unit test through ferrofluid_jni_v_slots). */
#include <stdarg.h>
#include <stdint.h>

typedef void *jref;
typedef void *const *jni_table;
typedef const jni_table *jni_env;

#define SLOT(env, i) ((*(env))[(i)])

#define CALL3(name, type, slot)                                                            \
    type ferrofluid_jni_##name(jni_env env, jref obj, jref mid, ...) {                     \
        va_list a;                                                                         \
        va_start(a, mid);                                                                  \
        type r = ((type(*)(jni_env, jref, jref, va_list))SLOT(env, slot))(env, obj, mid, a); \
        va_end(a);                                                                         \
        return r;                                                                          \
    }
#define CALL3_VOID(name, slot)                                                             \
    void ferrofluid_jni_##name(jni_env env, jref obj, jref mid, ...) {                     \
        va_list a;                                                                         \
        va_start(a, mid);                                                                  \
        ((void (*)(jni_env, jref, jref, va_list))SLOT(env, slot))(env, obj, mid, a);       \
        va_end(a);                                                                         \
    }
#define CALL4(name, type, slot)                                                            \
    type ferrofluid_jni_##name(jni_env env, jref obj, jref cls, jref mid, ...) {           \
        va_list a;                                                                         \
        va_start(a, mid);                                                                  \
        type r = ((type(*)(jni_env, jref, jref, jref, va_list))SLOT(env, slot))(          \
            env, obj, cls, mid, a);                                                        \
        va_end(a);                                                                         \
        return r;                                                                          \
    }
#define CALL4_VOID(name, slot)                                                             \
    void ferrofluid_jni_##name(jni_env env, jref obj, jref cls, jref mid, ...) {           \
        va_list a;                                                                         \
        va_start(a, mid);                                                                  \
        ((void (*)(jni_env, jref, jref, jref, va_list))SLOT(env, slot))(env, obj, cls, mid, a); \
        va_end(a);                                                                         \
    }

/* One line per type: the three families, with the slot of each "...V" variant. */
#define FAMILY(T, type, virt, nonvirt, stat)        \
    CALL3(Call##T##Method, type, virt)              \
    CALL4(CallNonvirtual##T##Method, type, nonvirt) \
    CALL3(CallStatic##T##Method, type, stat)

FAMILY(Object, jref, 35, 65, 115)
FAMILY(Boolean, uint8_t, 38, 68, 118)
FAMILY(Byte, int8_t, 41, 71, 121)
FAMILY(Char, uint16_t, 44, 74, 124)
FAMILY(Short, int16_t, 47, 77, 127)
FAMILY(Int, int32_t, 50, 80, 130)
FAMILY(Long, int64_t, 53, 83, 133)
FAMILY(Float, float, 56, 86, 136)
FAMILY(Double, double, 59, 89, 139)
CALL3_VOID(CallVoidMethod, 62)
CALL4_VOID(CallNonvirtualVoidMethod, 92)
CALL3_VOID(CallStaticVoidMethod, 142)
CALL3(NewObject, jref, 29)

/* The "...V" slots used above, in the order Object..Double, Void (virtual, nonvirtual, static
 * each), then NewObjectV. */
const int32_t ferrofluid_jni_v_slots[31] = {
    35, 65, 115, 38, 68, 118, 41, 71, 121, 44, 74, 124, 47, 77, 127, 50,
    80, 130, 53, 83, 133, 56, 86, 136, 59, 89, 139, 62, 92, 142, 29,
};
