package ferrofluid;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Array;
import jdk.internal.vm.annotation.DontInline;

/**
 * Allocation counting for the agent's {@code alloc} engine: the {@code alloc} probe after every
 * {@code new}, {@code newarray}, {@code anewarray} and {@code multianewarray} calls {@link #alloc}
 * with the new object and its allocation-site id. Counts are kept here, in Java, with one add
 * per allocation (and one more for an array's length), so that counting costs no JNI call;
 * only the objects the agent measures or tracks (the first of each site, then every
 * {@code every}-th, or one each time about {@code bytes} more bytes were allocated there) reach
 * the native {@link #sample}.
 *
 * <p>Counting only and by bytes, a thread counts with plain adds in a set of counters of its
 * own: set {@code h} of {@link #STRIPES}, {@code h} its {@code Thread}'s id (else identity hash), unless
 * another thread claimed that set in the session; then, as when tracking every N-th, it counts
 * with atomic adds in the set every thread shares. Threads allocating at the same sites on
 * different cores then neither wait for each other's atomic adds nor write one cache line
 * (decision 0077). A site's counts are the sums over the sets; the agent reads them with
 * {@link #counts}. Which allocation of a site is tracked next is kept beside its counters in
 * each set (its "next" count): the first object of a site in each set is measured, and by bytes
 * one is tracked each time about {@code bytes} more were allocated there in that set. The
 * counting path compares the count with it; the division that picks the next one runs only for
 * a tracked object, in {@link #tracked}, which is too big for the JIT to inline where it is
 * rarely called. Every {@code every}-th is picked by the count itself in the shared set, exactly
 * also when threads race at a site. The agent defines this class in the bootstrap loader and
 * sets it up with {@link #reset}.
 *
 * <p>Objects the JVM allocates for a call (reflection, {@code clone()}) and the inner arrays of a
 * {@code multianewarray} reach {@link #vm} and {@link #inner} with the id of a site whose class
 * is known only at run time: such a site has counters for up to {@code SLOTS - 1} classes, each
 * claimed by the first object of its class, and one more for every other class. The agent reads
 * them with {@link #vmCounts} and {@link #vmNames}. Compiled by {@code javac -source 11 -target
 * 11 --add-exports java.base/jdk.internal.vm.annotation=ALL-UNNAMED --add-exports
 * java.base/jdk.internal.misc=ALL-UNNAMED} (for {@code @DontInline}, which HotSpot honours in
 * classes of the bootstrap loader, and the {@code Unsafe} that reads thread ids) into Alloc.class
 * next to this file (checked by a test).
 */
public final class Alloc {
    private Alloc() {
    }

    private static final VarHandle AT = MethodHandles.arrayElementVarHandle(long[].class);
    /**
     * How a thread's set is found: the offset of {@code Thread.tid}, read through {@code Unsafe}
     * (a field read, where the identity hash of a thread being joined is a call into the VM), or
     * -1 where {@code jdk.internal.misc} is not exported to this class (the agent exports it).
     */
    private static final jdk.internal.misc.Unsafe UNSAFE;
    private static final long TID;

    static {
        jdk.internal.misc.Unsafe u = null;
        long tid = -1;
        try {
            u = jdk.internal.misc.Unsafe.getUnsafe();
            tid = u.objectFieldOffset(Thread.class, "tid");
        } catch (Throwable e) {
            // IllegalAccessError (not exported here), InternalError (no such field).
            tid = -1;
        }
        UNSAFE = u;
        TID = tid;
    }
    /**
     * Sites per chunk: 64, two counters each (objects, array elements), then each site's next
     * count to track ({@code NEXT} on). Small, as each set of counters has its own chunks, made
     * for the sites its thread allocates at.
     */
    private static final int SHIFT = 6;
    private static final int MASK = (1 << SHIFT) - 1;
    private static final int NEXT = 2 << SHIFT;
    /** Sets of counters a thread may claim (a power of two). */
    static final int STRIPES = 32;
    /** The set every thread shares: atomic adds. */
    private static final int SHARED = STRIPES;

    /**
     * Per set of counters (the shared one last), its counters per chunk of sites; a chunk is
     * created once and never replaced in a session.
     */
    private static volatile long[][][] stripes = newStripes();
    /** The thread that claimed each set of counters in the session (null: none yet). */
    private static volatile Thread[] owners = new Thread[STRIPES];
    private static final VarHandle OWNERS = MethodHandles.arrayElementVarHandle(Thread[].class);
    /**
     * Counters the claimed sets may still make (a share of the heap); past it, their threads
     * count in the shared set where they have no chunk.
     */
    private static long countersLeft;
    /** The claimed sets may make no more counters. */
    private static volatile boolean spent;
    /** Every how many allocations of a site one goes to the agent (0: the first only). */
    private static volatile long every;
    /** Or, when positive: about every how many bytes allocated at a site one goes to it. */
    private static volatile long bytes;
    /**
     * {@code every} as odd * 2^{@code everyShift}: the inverse of the odd factor modulo 2^64 and
     * the largest quotient, so that "is a count a multiple of {@code every}" is a multiply, a
     * rotate and a compare instead of a division on every allocation (Hacker's Delight, 10-17).
     * Written before {@code every}, whose volatile write publishes them.
     */
    private static long everyInverse;
    private static int everyShift;
    private static long everyLimit;

    /** Counters per site counted per runtime class: up to 15 classes and the rest. */
    private static final int SLOTS = 16;
    /** Such sites per chunk: 256. */
    private static final int VM_SHIFT = 8;
    private static final int VM_MASK = (1 << VM_SHIFT) - 1;
    /** Where the slots' next counts to track begin in a chunk's counters. */
    private static final int VM_NEXT = (2 * SLOTS) << VM_SHIFT;
    private static final VarHandle CLASSES = MethodHandles.arrayElementVarHandle(Object[].class);
    /**
     * Per chunk of such sites: the class of each slot ({@code SLOTS} per site), then, in the last
     * element, the {@code long[]} of the slots' counters (objects, array elements; then each
     * slot's next count to track): one read gets both, even while {@link #reset} replaces them.
     */
    private static volatile Object[][] vmChunks = new Object[0][];

    /**
     * Counts {@code o}, allocated at the site {@code marked} names; hands it to the agent if it
     * is tracked. An array's site comes with its sign bit set (its probe knows what its instruction allocates),
     * so that counting asks nothing of the object's class. Not inlined: the JIT compiles it
     * once instead of into every allocating method of the program and the JDK, which more than
     * pays for the call (decision 0064).
     */
    @DontInline
    public static void alloc(Object o, int marked) {
        int site = marked & Integer.MAX_VALUE;
        long e = every;
        int s = SHARED;
        if (e <= 0) {
            Thread t = Thread.currentThread();
            long tid = TID;
            int h = (tid >= 0 ? (int) UNSAFE.getLong(t, tid) : System.identityHashCode(t))
                & (STRIPES - 1);
            Thread[] w = owners;
            if (w[h] == t || claim(w, h, t)) {
                s = h;
            }
        }
        long[][][] all = stripes;
        long[][] c = all[s];
        int i = site >>> SHIFT;
        long[] a = i < c.length ? c[i] : null;
        if (a == null) {
            a = s != SHARED && spent ? null : chunk(s, i);
            if (a == null) {
                s = SHARED;
                c = all[s];
                a = i < c.length ? c[i] : null;
                if (a == null) {
                    a = chunk(s, i);
                }
            }
        }
        int k = site & MASK;
        long n = s != SHARED ? add(a, k << 1, o, marked < 0) : count(a, k << 1, o, marked < 0);
        if (e > 0) {
            // Every e-th exactly, also when threads race at the site.
            if (multiple(n)) {
                tracked(o, site, n, false);
            }
        } else if (n >= a[NEXT + k]) {
            // A plain read: a race tracks one object more or less, never a wrong count.
            a[NEXT + k] = tracked(o, site, n, false);
        }
    }

    /** Whether {@code n} (0 or more) is a multiple of {@code every} (positive). */
    private static boolean multiple(long n) {
        return Long.compareUnsigned(Long.rotateRight(n * everyInverse, everyShift), everyLimit)
                <= 0;
    }

    /**
     * Hands {@code o}, the {@code n}-th object counted at its site (or its slot of a site
     * counted per class, {@code vm}), to the agent; returns the count at which the site's next
     * object is tracked: {@code n + every}, or, by bytes, the count at which about
     * {@code bytes} more bytes will have been allocated there if its objects keep the size of
     * {@code o} (the agent measures it); the first object only with neither.
     */
    private static long tracked(Object o, int site, long n, boolean vm) {
        long size = vm ? sampleVm(o, site) : sample(o, site);
        long b = bytes;
        long e = every;
        long step;
        if (b > 0) {
            step = size > 0 ? Math.max(1, b / size) : b;
        } else if (e > 0) {
            step = e;
        } else {
            return Long.MAX_VALUE;
        }
        return n + step < n ? Long.MAX_VALUE : n + step;
    }

    /**
     * Adds {@code o} to the counters at {@code j} (an array's length at {@code j + 1} if
     * {@code array}); returns the objects counted there before it.
     */
    private static long count(long[] a, int j, Object o, boolean array) {
        long n = (long) AT.getAndAdd(a, j, 1L);
        if (array) {
            AT.getAndAdd(a, j + 1, (long) Array.getLength(o));
        }
        return n;
    }

    /**
     * As {@link #count(long[], int, Object, boolean)} in a set of counters only the calling
     * thread adds to: plain adds.
     */
    private static long add(long[] a, int j, Object o, boolean array) {
        long n = a[j];
        a[j] = n + 1;
        if (array) {
            a[j + 1] += Array.getLength(o);
        }
        return n;
    }

    /** Whether thread {@code t} now owns set {@code h}, which nobody had claimed. */
    private static boolean claim(Thread[] w, int h, Thread t) {
        return w[h] == null && OWNERS.compareAndSet(w, h, null, t);
    }

    /** As {@link #count(long[], int, Object, boolean)}, asking {@code o}'s class. */
    private static long count(long[] a, int j, Object o) {
        long n = (long) AT.getAndAdd(a, j, 1L);
        if (o.getClass().isArray()) {
            AT.getAndAdd(a, j + 1, (long) Array.getLength(o));
        }
        return n;
    }

    /** Counts {@code o}, which the JVM allocated for the call at {@code site}, by its class. */
    public static void vm(Object o, int site) {
        if (o != null) {
            vmCount(o, site);
        }
    }

    /**
     * Counts the inner arrays of {@code o}, a new multi-dimensional array (of
     * {@code multianewarray} or {@code Array.newInstance}), at {@code site} by their class. In a
     * new array every non-null element of an array of arrays is one of them.
     */
    public static void inner(Object o, int site) {
        if (o instanceof Object[] && o.getClass().getComponentType().isArray()) {
            for (Object e : (Object[]) o) {
                if (e != null) {
                    vmCount(e, site);
                    inner(e, site);
                }
            }
        }
    }

    private static void vmCount(Object o, int site) {
        int i = site >>> VM_SHIFT;
        Object[][] n = vmChunks;
        Object[] c = i < n.length ? n[i] : null;
        if (c == null) {
            c = vmChunk(i);
        }
        int base = (site & VM_MASK) * SLOTS;
        int slot = slot(c, base, o.getClass());
        long[] a = (long[]) c[SLOTS << VM_SHIFT];
        long k = count(a, (base + slot) << 1, o);
        int next = VM_NEXT + base + slot;
        long e = every;
        if (slot == SLOTS - 1) {
            return;
        }
        if (e > 0) {
            if (multiple(k)) {
                tracked(o, site, k, true);
            }
        } else if (k >= a[next]) {
            a[next] = tracked(o, site, k, true);
        }
    }

    /** The slot of class {@code k} among the {@code SLOTS} of a site from {@code base}. */
    private static int slot(Object[] c, int base, Class<?> k) {
        for (int j = 0; j < SLOTS - 1; j++) {
            Object x = CLASSES.getVolatile(c, base + j);
            if (x == null) {
                if (CLASSES.compareAndSet(c, base + j, null, k)) {
                    return j;
                }
                // Another thread claimed it: look at it again.
                j--;
                continue;
            }
            if (x == k) {
                return j;
            }
        }
        return SLOTS - 1;
    }

    /** The chunk {@code i} of sites counted per class, created on first use. */
    private static synchronized Object[] vmChunk(int i) {
        Object[][] n = vmChunks;
        if (i < n.length && n[i] != null) {
            return n[i];
        }
        // A new array, published by the volatile write alone.
        Object[][] m = new Object[Math.max(i + 1, n.length)][];
        System.arraycopy(n, 0, m, 0, n.length);
        Object[] c = new Object[(SLOTS << VM_SHIFT) + 1];
        c[SLOTS << VM_SHIFT] = new long[(3 * SLOTS) << VM_SHIFT];
        m[i] = c;
        vmChunks = m;
        return c;
    }

    /**
     * The chunk of counters {@code i} of set {@code s}, created on first use; null if a claimed
     * set may make no more counters.
     */
    private static synchronized long[] chunk(int s, int i) {
        long[][][] all = stripes;
        long[][] c = all[s];
        if (i < c.length && c[i] != null) {
            return c[i];
        }
        if (s != SHARED) {
            if (countersLeft < 3 << SHIFT) {
                spent = true;
                return null;
            }
            countersLeft -= 3 << SHIFT;
        }
        if (i >= c.length) {
            // Half as many chunks again: one copy per growth, not per chunk.
            long[][] grown = new long[Math.max(i + 1, c.length + (c.length >> 1))][];
            System.arraycopy(c, 0, grown, 0, c.length);
            c = grown;
        }
        if (c[i] == null) {
            c[i] = new long[3 << SHIFT];
        }
        // A counting thread that reads the set's old array finds no chunk and comes here.
        all[s] = c;
        return c[i];
    }

    /** Lets the claimed sets make only {@code n} more counters (tests). */
    static synchronized void counterBudgetForTest(long n) {
        countersLeft = n;
    }

    private static long[][][] newStripes() {
        long[][][] all = new long[STRIPES + 1][][];
        for (int s = 0; s <= STRIPES; s++) {
            all[s] = new long[0][];
        }
        return all;
    }

    /**
     * Forgets every count and tracks every {@code every}-th allocation of each site from now on,
     * or, if {@code bytes} is positive, one each time about {@code bytes} more bytes were
     * allocated at the site. Runs before any class carries probes, and first runs the counting
     * path once: linking its {@code VarHandle} call sites allocates in the JDK's own (probed)
     * code, which would call {@link #alloc} again, before that link exists, until the stack
     * overflows.
     */
    public static synchronized void reset(long every, long bytes) {
        count(new long[2], 0, new long[1]);
        count(new long[2], 0, new long[1], true);
        multiple(0);
        slot(new Object[SLOTS], 0, Alloc.class);
        add(new long[2], 0, new long[1], true);
        claim(new Thread[1], 0, Thread.currentThread());
        stripes = newStripes();
        owners = new Thread[STRIPES];
        // A 64th of the heap, in longs.
        countersLeft = Runtime.getRuntime().maxMemory() / 64 / 8;
        spent = false;
        vmChunks = new Object[0][];
        if (every > 0) {
            everyShift = Long.numberOfTrailingZeros(every);
            long odd = every >>> everyShift;
            // Newton's iteration: each step doubles the correct low bits (3 to begin with).
            long inverse = odd;
            for (int i = 0; i < 5; i++) {
                inverse *= 2 - odd * inverse;
            }
            everyInverse = inverse;
            // (2^64 - 1) / every, unsigned, without Long.divideUnsigned (a BigInteger on JDK 17).
            long limit = ((-1L >>> 1) / every) << 1;
            if (Long.compareUnsigned(-1L - limit * every, every) >= 0) {
                limit++;
            }
            everyLimit = limit;
        }
        Alloc.every = every;
        Alloc.bytes = bytes;
    }

    /**
     * Drops every counter: the agent read them at the end of a session, which then keeps none of
     * the heap they took. Counts made afterwards (probes not removed yet) go to new ones.
     */
    public static synchronized void forget() {
        stripes = newStripes();
        owners = new Thread[STRIPES];
        vmChunks = new Object[0][];
    }

    /**
     * The counters of sites {@code 0..sites}: objects of site s at {@code 2*s}, array elements at
     * {@code 2*s+1}.
     */
    public static long[] counts(int sites) {
        long[] out = new long[2 * sites];
        for (long[][] c : stripes) {
            for (int i = 0; i < c.length; i++) {
                long[] a = c[i];
                int from = i << (SHIFT + 1);
                if (a == null || from >= out.length) {
                    continue;
                }
                int n = Math.min(NEXT, out.length - from);
                for (int k = 0; k < n; k++) {
                    out[from + k] += (long) AT.getVolatile(a, k);
                }
            }
        }
        return out;
    }

    /**
     * The counters of the sites counted per class {@code 0..sites}: slot j of site s at
     * {@code 2*(s*16+j)} (objects) and the next (array elements).
     */
    public static long[] vmCounts(int sites) {
        Object[][] c = vmChunks;
        long[] out = new long[2 * SLOTS * sites];
        for (int i = 0; i < c.length; i++) {
            int from = i * 2 * (SLOTS << VM_SHIFT);
            if (c[i] == null || from >= out.length) {
                continue;
            }
            long[] a = (long[]) c[i][SLOTS << VM_SHIFT];
            int n = Math.min(VM_NEXT, out.length - from);
            for (int k = 0; k < n; k++) {
                out[from + k] = (long) AT.getVolatile(a, k);
            }
        }
        return out;
    }

    /**
     * The classes of the slots of those sites, as internal names ({@code [I},
     * {@code java/lang/String}), null where no class claimed the slot.
     */
    public static String[] vmNames(int sites) {
        Object[][] c = vmChunks;
        String[] out = new String[SLOTS * sites];
        for (int i = 0; i < c.length; i++) {
            Object[] a = c[i];
            int from = i * (SLOTS << VM_SHIFT);
            if (a == null || from >= out.length) {
                continue;
            }
            int m = Math.min(SLOTS << VM_SHIFT, out.length - from);
            for (int k = 0; k < m; k++) {
                Object x = CLASSES.getVolatile(a, k);
                if (x != null) {
                    out[from + k] = ((Class<?>) x).getName().replace('.', '/');
                }
            }
        }
        return out;
    }

    /**
     * The agent measures (and, when it tracks objects, tags) {@code o}; returns its size in
     * bytes (0 if not measured).
     */
    private static native long sample(Object o, int site);

    /** As {@link #sample}, for a site counted per class. */
    private static native long sampleVm(Object o, int site);
}
