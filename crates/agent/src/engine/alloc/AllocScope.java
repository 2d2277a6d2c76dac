package ferrofluid;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@code alloc} engine with roots: only allocations made while the thread is inside a root
 * invocation (the roots' dynamic extent) are counted. The methods of the roots' call subgraph
 * carry entry/exit probes that call {@link #enter}, {@link #exit} and {@link #unwind} here, and
 * allocation probes that call {@link #alloc}. A root's probes (a negative id) keep the thread's
 * root depth, in Java, in a per-thread {@code int[]}; every probe then goes on to the agent's
 * hooks class, which reveals the call subgraph as in the {@code cpu} mode. An allocation is
 * handed to {@link Alloc#alloc} only if its thread's depth is positive; while no thread is
 * inside a root, one read of {@link #INSIDE} answers without the per-thread lookup.
 * Compiled as Alloc.java is (see its comment) with Alloc.java and tools/hooks/ferrofluid/Hooks.java
 * into AllocScope.class next to this file (checked by a test).
 */
public final class AllocScope {
    private AllocScope() {
    }

    /** Threads whose depth is positive in the current epoch (0: no thread is inside a root). */
    private static final AtomicInteger INSIDE = new AtomicInteger();
    /** The thread's root depth at [0] and the epoch it was counted in at [1]. */
    private static final ThreadLocal<int[]> DEPTH = new ThreadLocal<>();
    /** Bumped by {@link #reset}: depths of an earlier session count for nothing. */
    private static volatile int epoch;

    /** Allocation site {@code site} created {@code o}: counted if the thread is inside a root. */
    public static void alloc(Object o, int site) {
        if (INSIDE.get() == 0) {
            return;
        }
        int[] d = DEPTH.get();
        if (d == null || d[0] == 0 || d[1] != epoch) {
            return;
        }
        Alloc.alloc(o, site);
    }

    /** As {@link #alloc}, for {@link Alloc#vm}: an object the JVM allocated for a call. */
    public static void vm(Object o, int site) {
        if (inside()) {
            Alloc.vm(o, site);
        }
    }

    /** As {@link #alloc}, for {@link Alloc#inner}: a new array's inner arrays. */
    public static void inner(Object o, int site) {
        if (inside()) {
            Alloc.inner(o, site);
        }
    }

    private static boolean inside() {
        if (INSIDE.get() == 0) {
            return false;
        }
        int[] d = DEPTH.get();
        return d != null && d[0] != 0 && d[1] == epoch;
    }

    /** Method {@code id} (a root: {@code ~id}, negative) was entered. */
    public static void enter(int id) {
        if (id < 0) {
            rootEntered();
        }
        Hooks.enter(id);
    }

    /** Method {@code id} returns normally. */
    public static void exit(int id) {
        Hooks.exit(id);
        if (id < 0) {
            rootLeft();
        }
    }

    /** Method {@code id} exits by an exception. */
    public static void unwind(int id) {
        Hooks.unwind(id);
        if (id < 0) {
            rootLeft();
        }
    }

    /** A virtual call at receiver site {@code site} is about to be made on {@code o}. */
    public static void receiver(Object o, int site) {
        Hooks.receiver(o, site);
    }

    /** The call(s) of deferred site {@code site} are about to be made. */
    public static void site(int site) {
        Hooks.site(site);
    }

    private static void rootEntered() {
        int[] d = DEPTH.get();
        if (d == null) {
            d = new int[2];
            DEPTH.set(d);
        }
        int e = epoch;
        if (d[1] != e) {
            d[0] = 0;
            d[1] = e;
        }
        if (d[0]++ == 0) {
            INSIDE.incrementAndGet();
        }
    }

    private static void rootLeft() {
        int[] d = DEPTH.get();
        // A root entered before its probes were inserted, or in an earlier session.
        if (d == null || d[0] == 0 || d[1] != epoch) {
            return;
        }
        if (--d[0] == 0) {
            INSIDE.decrementAndGet();
        }
    }

    /** A new session: every thread is outside every root. */
    public static synchronized void reset() {
        epoch++;
        INSIDE.set(0);
    }
}
