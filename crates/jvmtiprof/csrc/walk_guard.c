/*
 * jvmtiprof: the crash-contained stack walk.
 *
 * HotSpot's AsyncGetCallTrace walks a thread's stack from the state a signal interrupted, without
 * a safepoint, and can fault on a stack it misreads (a frame being built, code being unloaded).
 * A fault there must never kill the JVM. jvmtiprof_walk() takes a sigsetjmp point just before the
 * call and registers it under the calling thread's id; the SIGSEGV/SIGBUS handler installed over
 * the JVM's (jvmtiprof_install_fault_handlers) jumps back to that point when the faulting thread
 * is inside a walk, and hands every other fault to the handler it replaced, with the same
 * arguments, exactly as the kernel would have. Both live in C so that the jump crosses no Rust
 * frame: between the sigsetjmp point and the fault handler there are only the JVM's frames and the
 * kernel's signal frame.
 *
 * Inside the same guard, jvmtiprof_walk() finds which frame's compiled code the interrupted
 * program counter is in (jvmtiprof_compiled_frame), reading HotSpot's Method and nmethod at the
 * offsets its VMStructs table gives: the frames above that one were inlined into it. The methods
 * are on the walked stack and their code is running, so both are alive; a misread faults into
 * the guard like a fault of the walk.
 *
 * Everything here is async-signal-safe: atomics, sigaction, pthread_sigmask, siglongjmp.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>

/* ASGCT_CallFrame and ASGCT_CallTrace, as HotSpot's forte.cpp declares them. */
typedef struct {
    int lineno;
    void *method_id;
} jvmtiprof_call_frame;

typedef struct {
    void *env_id;
    int num_frames;
    jvmtiprof_call_frame *frames;
} jvmtiprof_call_trace;

typedef void (*jvmtiprof_asgct)(jvmtiprof_call_trace *trace, int depth, void *ucontext);

/* Where HotSpot keeps what jvmtiprof_compiled_frame reads: byte offsets of fields (from
 * VMStructs) and the addresses of the code cache's bounds. Mirrors CodeLayout in vmstructs.rs. */
typedef struct {
    const uintptr_t *low_bound;  /* &CodeCache::_low_bound */
    const uintptr_t *high_bound; /* &CodeCache::_high_bound */
    int method_code;             /* Method::_code */
    int method_const;            /* Method::_constMethod */
    int const_constants;         /* ConstMethod::_constants */
    int pool_holder;             /* ConstantPool::_pool_holder */
    int osr_head;                /* InstanceKlass::_osr_nmethods_head */
    int osr_link;                /* nmethod::_osr_link */
    int code_method;             /* nmethod::_method */
    int code_begin;              /* CodeBlob::_code_begin, or _code_offset when `relative` */
    int code_end;                /* CodeBlob::_code_end, or _data_offset when `relative` */
    int relative;                /* the code's bounds are int offsets from the blob (JDK 25) */
} jvmtiprof_code_layout;

/* Frames looked at for the compiled code the pc is in: inlining is never deeper than this. */
#define COMPILED_SEARCH 32
/* OSR compilations of one class looked at. */
#define OSR_SEARCH 16

static uintptr_t word_at(uintptr_t base, int offset) {
    return base == 0 ? 0 : *(const uintptr_t *)(base + (uintptr_t)offset);
}

static int code_contains(const jvmtiprof_code_layout *l, uintptr_t blob, uintptr_t pc) {
    uintptr_t begin, end;
    if (l->relative) {
        begin = blob + (uintptr_t)(intptr_t)*(const int32_t *)(blob + (uintptr_t)l->code_begin);
        end = blob + (uintptr_t)(intptr_t)*(const int32_t *)(blob + (uintptr_t)l->code_end);
    } else {
        begin = word_at(blob, l->code_begin);
        end = word_at(blob, l->code_end);
    }
    return pc >= begin && pc < end;
}

/* The index of the frame whose compiled code (its method's current code or one of its OSR
 * compilations) contains pc, or -1: pc outside the code cache, in a native method, in the
 * interpreter or in a stub. */
static int jvmtiprof_compiled_frame(const jvmtiprof_code_layout *l, const jvmtiprof_call_frame *frames,
                                    int n, uintptr_t pc) {
    uintptr_t low = *l->low_bound, high = *l->high_bound;
    if (pc < low || pc >= high) {
        return -1;
    }
    int limit = n < COMPILED_SEARCH ? n : COMPILED_SEARCH;
    for (int i = 0; i < limit; i++) {
        if (frames[i].lineno == -3) {
            return -1; /* a native method: the pc is in its native code */
        }
        uintptr_t id = (uintptr_t)frames[i].method_id;
        uintptr_t method = id == 0 ? 0 : *(const uintptr_t *)id;
        if (method < 4096) {
            continue; /* a jmethodID of an unloaded method */
        }
        uintptr_t code = word_at(method, l->method_code);
        if (code != 0 && code_contains(l, code, pc)) {
            return i;
        }
        uintptr_t holder = word_at(word_at(word_at(method, l->method_const), l->const_constants),
                                   l->pool_holder);
        uintptr_t osr = word_at(holder, l->osr_head);
        for (int k = 0; osr != 0 && k < OSR_SEARCH; k++, osr = word_at(osr, l->osr_link)) {
            if (word_at(osr, l->code_method) == method && code_contains(l, osr, pc)) {
                return i;
            }
        }
    }
    return -1;
}

enum {
    JVMTIPROF_WALK_DONE = 0,
    JVMTIPROF_WALK_FAULT = 1,
    JVMTIPROF_WALK_BUSY = 2,
};

/* Threads inside a walk: open addressing by thread id. A thread is in at most one walk at a time
 * (the profiling signals block each other while a handler runs). */
#define WALKERS 1024
#define PROBES 32

struct walker {
    atomic_int tid;                     /* 0: free */
    _Atomic(sigjmp_buf *) jump;         /* the walk's return point; NULL outside the call */
};

static struct walker walkers[WALKERS];
static atomic_ulong faults_contained;

static struct sigaction previous_segv;
static struct sigaction previous_bus;
static atomic_int installed;

static struct walker *claim(int tid) {
    unsigned start = (unsigned)tid & (WALKERS - 1);
    for (unsigned i = 0; i < PROBES; i++) {
        struct walker *w = &walkers[(start + i) & (WALKERS - 1)];
        int expected = 0;
        if (atomic_compare_exchange_strong(&w->tid, &expected, tid)) {
            return w;
        }
    }
    return NULL;
}

static void release(struct walker *w) {
    atomic_store_explicit(&w->jump, NULL, memory_order_relaxed);
    atomic_store_explicit(&w->tid, 0, memory_order_release);
}

/* Calls `asgct` for the interrupted context `ucontext` of the calling thread (`tid`), filling
 * `frames` (room for `depth`). Returns JVMTIPROF_WALK_DONE with *num_frames set (negative: the
 * JVM's reason for no frames), JVMTIPROF_WALK_FAULT when the walk faulted and was abandoned, or
 * JVMTIPROF_WALK_BUSY when no guard slot was free (the walk was not tried). */
int jvmtiprof_walk(jvmtiprof_asgct asgct, void *env, void *ucontext, jvmtiprof_call_frame *frames,
                   int depth, int tid, int *num_frames, const jvmtiprof_code_layout *layout,
                   uintptr_t pc, int *compiled_frame) {
    struct walker *w = claim(tid);
    if (w == NULL) {
        return JVMTIPROF_WALK_BUSY;
    }
    /* savemask 0: no system call per walk; the fault path restores the mask itself. */
    sigjmp_buf jump;
    if (sigsetjmp(jump, 0) != 0) {
        release(w);
        return JVMTIPROF_WALK_FAULT;
    }
    jvmtiprof_call_trace trace;
    trace.env_id = env;
    trace.num_frames = 0;
    trace.frames = frames;
    atomic_store_explicit(&w->jump, &jump, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    asgct(&trace, depth, ucontext);
    int compiled = -1;
    if (layout != NULL && trace.num_frames > 0) {
        compiled = jvmtiprof_compiled_frame(layout, frames, trace.num_frames, pc);
    }
    atomic_signal_fence(memory_order_seq_cst);
    release(w);
    *num_frames = trace.num_frames;
    *compiled_frame = compiled;
    return JVMTIPROF_WALK_DONE;
}

/* Passes a fault on to the handler installed before ours, as the kernel would have. */
static void chain(int sig, siginfo_t *info, void *ucontext) {
    const struct sigaction *previous = sig == SIGBUS ? &previous_bus : &previous_segv;
    if (previous->sa_flags & SA_SIGINFO) {
        if (previous->sa_sigaction != NULL) {
            previous->sa_sigaction(sig, info, ucontext);
            return;
        }
    } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
        previous->sa_handler(sig);
        return;
    }
    /* Default (or ignored, which the kernel treats as default for a fault): put the default
     * action back and return, so that the faulting instruction runs again and the process ends
     * as it would have without us. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
}

static void on_fault(int sig, siginfo_t *info, void *ucontext) {
    int saved_errno = errno;
    int tid = (int)syscall(SYS_gettid);
    unsigned start = (unsigned)tid & (WALKERS - 1);
    for (unsigned i = 0; i < PROBES; i++) {
        struct walker *w = &walkers[(start + i) & (WALKERS - 1)];
        if (atomic_load_explicit(&w->tid, memory_order_relaxed) != tid) {
            continue;
        }
        sigjmp_buf *jump = atomic_load_explicit(&w->jump, memory_order_relaxed);
        if (jump == NULL) {
            break;
        }
        atomic_store_explicit(&w->jump, NULL, memory_order_relaxed);
        atomic_fetch_add_explicit(&faults_contained, 1, memory_order_relaxed);
        /* Back to the signal mask of the walk (the profiling handler's), with this fault
         * signal unblocked, as returning from this handler would have left it. */
        if (ucontext != NULL) {
            pthread_sigmask(SIG_SETMASK, &((ucontext_t *)ucontext)->uc_sigmask, NULL);
        }
        errno = saved_errno;
        siglongjmp(*jump, 1);
    }
    errno = saved_errno;
    chain(sig, info, ucontext);
}

static int install_one(int sig, struct sigaction *previous) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) {
        return -1;
    }
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault) {
        return 0;
    }
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_fault;
    /* The mask of the handler we replace (HotSpot blocks every signal but the error signals in
     * its own); SA_NODEFER so that a fault inside the handler we chain to reaches it again. */
    ours.sa_mask = current.sa_mask;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | (current.sa_flags & SA_ONSTACK);
    *previous = current;
    return sigaction(sig, &ours, NULL);
}

/* Installs the fault handler over the current SIGSEGV and SIGBUS handlers (idempotent).
 * Returns 0, or -1 with errno set. */
int jvmtiprof_install_fault_handlers(void) {
    if (install_one(SIGSEGV, &previous_segv) != 0 || install_one(SIGBUS, &previous_bus) != 0) {
        return -1;
    }
    atomic_store(&installed, 1);
    return 0;
}

static int uninstall_one(int sig, const struct sigaction *previous) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) {
        return 0;
    }
    if (!((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_fault)) {
        /* Someone installed a handler over ours and may chain to it: ours stays, passing every
         * fault on. */
        return 0;
    }
    return sigaction(sig, previous, NULL) == 0;
}

/* Puts back the handlers ours replaced where ours is still the installed one. Returns a bit mask:
 * 1 SIGSEGV restored, 2 SIGBUS restored; a handler not restored keeps passing every fault on. */
int jvmtiprof_uninstall_fault_handlers(void) {
    if (!atomic_load(&installed)) {
        return 3;
    }
    int restored = uninstall_one(SIGSEGV, &previous_segv) | (uninstall_one(SIGBUS, &previous_bus) << 1);
    if (restored == 3) {
        atomic_store(&installed, 0);
    }
    return restored;
}

/* Faults inside a walk that were contained since the library was loaded. */
unsigned long jvmtiprof_faults_contained(void) {
    return atomic_load_explicit(&faults_contained, memory_order_relaxed);
}

/* Threads inside a walk right now. */
int jvmtiprof_walks_in_flight(void) {
    int n = 0;
    for (unsigned i = 0; i < WALKERS; i++) {
        n += atomic_load_explicit(&walkers[i].tid, memory_order_relaxed) != 0;
    }
    return n;
}

/* A stand-in for AsyncGetCallTrace that faults: the tests' proof that a fault inside a walk is
 * contained. */
void jvmtiprof_faulting_walk(jvmtiprof_call_trace *trace, int depth, void *ucontext) {
    (void)depth;
    (void)ucontext;
    volatile int *volatile nowhere = (volatile int *)(uintptr_t)16;
    trace->num_frames = *nowhere;
}
