/*
 * The event-based exact profiler the papers compare against: a JVMTI agent that enables
 * MethodEntry/MethodExit for every thread, keeps a per-thread shadow stack of (method, entry
 * timestamp) and, per thread, a hash table of method -> (calls, inclusive ns). At VM death it merges
 * the tables and prints one line to stderr:
 *   methodevents: methods=N calls=C threads=T max_depth=D
 * Doing this much per event keeps its work comparable to ferrofluid's probes.
 *
 * Build: cc -O2 -shared -fPIC -I$JAVA_HOME/include -I$JAVA_HOME/include/linux -o libmethodevents.so methodevents.c -lpthread
 */
#include <jvmti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    jmethodID method;
    uint64_t calls;
    uint64_t total_ns;
} entry_t;

typedef struct {
    jmethodID method;
    uint64_t start;
} frame_t;

typedef struct tstate {
    struct tstate *next;
    frame_t *stack;
    size_t depth, stack_cap, max_depth;
    entry_t *table;
    size_t table_cap, table_len;
} tstate_t;

static __thread tstate_t *self;
static tstate_t *all_threads;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int dead;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t slot_of(jmethodID m, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)m * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static entry_t *find(entry_t *table, size_t cap, jmethodID m) {
    size_t i = slot_of(m, cap);
    while (table[i].method != NULL && table[i].method != m) {
        i = (i + 1) & (cap - 1);
    }
    return &table[i];
}

/* Returns this thread's entry for m, growing the table at 50% load. NULL if out of memory. */
static entry_t *lookup(tstate_t *t, jmethodID m) {
    entry_t *e = find(t->table, t->table_cap, m);
    if (e->method == m) {
        return e;
    }
    if (2 * (t->table_len + 1) > t->table_cap) {
        size_t cap = t->table_cap * 2;
        entry_t *table = calloc(cap, sizeof(entry_t));
        if (table == NULL) {
            return NULL;
        }
        for (size_t i = 0; i < t->table_cap; i++) {
            if (t->table[i].method != NULL) {
                *find(table, cap, t->table[i].method) = t->table[i];
            }
        }
        free(t->table);
        t->table = table;
        t->table_cap = cap;
        e = find(table, cap, m);
    }
    e->method = m;
    t->table_len++;
    return e;
}

static tstate_t *state(void) {
    if (self == NULL) {
        tstate_t *t = calloc(1, sizeof(tstate_t));
        if (t == NULL) {
            return NULL;
        }
        t->stack_cap = 256;
        t->stack = malloc(t->stack_cap * sizeof(frame_t));
        t->table_cap = 1024;
        t->table = calloc(t->table_cap, sizeof(entry_t));
        if (t->stack == NULL || t->table == NULL) {
            free(t->stack);
            free(t->table);
            free(t);
            return NULL;
        }
        pthread_mutex_lock(&all_lock);
        t->next = all_threads;
        all_threads = t;
        pthread_mutex_unlock(&all_lock);
        self = t;
    }
    return self;
}

static void JNICALL method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method) {
    tstate_t *t = state();
    if (t == NULL || dead) {
        return;
    }
    if (t->depth == t->stack_cap) {
        frame_t *stack = realloc(t->stack, 2 * t->stack_cap * sizeof(frame_t));
        if (stack == NULL) {
            return;
        }
        t->stack = stack;
        t->stack_cap *= 2;
    }
    t->stack[t->depth].method = method;
    t->stack[t->depth].start = now_ns();
    t->depth++;
    if (t->depth > t->max_depth) {
        t->max_depth = t->depth;
    }
}

static void JNICALL method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
                            jboolean by_exception, jvalue value) {
    tstate_t *t = self;
    if (t == NULL || dead) {
        return;
    }
    uint64_t end = now_ns();
    /* Frames entered before the agent saw them have no entry: pop only a matching frame. */
    while (t->depth > 0) {
        frame_t f = t->stack[--t->depth];
        entry_t *e = lookup(t, f.method);
        if (e != NULL) {
            e->calls++;
            e->total_ns += end - f.start;
        }
        if (f.method == method) {
            break;
        }
    }
}

static void JNICALL vm_death(jvmtiEnv *jvmti, JNIEnv *jni) {
    dead = 1;
    tstate_t merged = {0};
    merged.table_cap = 1024;
    merged.table = calloc(merged.table_cap, sizeof(entry_t));
    uint64_t calls = 0;
    size_t threads = 0, max_depth = 0;
    pthread_mutex_lock(&all_lock);
    for (tstate_t *t = all_threads; t != NULL; t = t->next) {
        threads++;
        if (t->max_depth > max_depth) {
            max_depth = t->max_depth;
        }
        for (size_t i = 0; i < t->table_cap; i++) {
            if (t->table[i].method != NULL) {
                calls += t->table[i].calls;
                entry_t *e = merged.table ? lookup(&merged, t->table[i].method) : NULL;
                if (e != NULL) {
                    e->calls += t->table[i].calls;
                    e->total_ns += t->table[i].total_ns;
                }
            }
        }
    }
    pthread_mutex_unlock(&all_lock);
    fprintf(stderr, "methodevents: methods=%zu calls=%llu threads=%zu max_depth=%zu\n", merged.table_len,
            (unsigned long long)calls, threads, max_depth);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *jvmti;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
        return JNI_ERR;
    }
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof(caps));
    caps.can_generate_method_entry_events = 1;
    caps.can_generate_method_exit_events = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
        return JNI_ERR;
    }
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.MethodEntry = method_entry;
    cb.MethodExit = method_exit;
    cb.VMDeath = vm_death;
    if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb)) != JVMTI_ERROR_NONE) {
        return JNI_ERR;
    }
    jvmtiEvent events[] = {JVMTI_EVENT_METHOD_ENTRY, JVMTI_EVENT_METHOD_EXIT, JVMTI_EVENT_VM_DEATH};
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, events[i], NULL) != JVMTI_ERROR_NONE) {
            return JNI_ERR;
        }
    }
    return JNI_OK;
}
