import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the alloc probe's "is this thread inside a root?" check costs per allocation
 * (docs/decisions/0040-alloc-root-extent.md). Each variant allocates and, if the check says
 * so, counts as `ferrofluid/Alloc` does (one VarHandle add on a shared long[]):
 * count       no check (alloc without roots)
 * closed      the global gate: no thread inside a root, one read of an AtomicInteger
 * tl-in       gate open, ThreadLocal<int[]> depth read, thread inside: counted (chosen)
 * tl-out      gate open, ThreadLocal<int[]> depth read, thread outside: not counted
 * id-in       gate open, Thread.currentThread() looked up by identity hash in a Thread[]
 * tid-in      gate open, Thread.currentThread() looked up by its id in a Thread[]
 * Usage: java ScopeBench VARIANT THREADS N (best of 5 runs; each variant in its own JVM).
 */
public class ScopeBench {
    static final VarHandle AT = MethodHandles.arrayElementVarHandle(long[].class);
    static final long[] shared = new long[8192];
    static final AtomicInteger INSIDE = new AtomicInteger();
    static final ThreadLocal<int[]> DEPTH = new ThreadLocal<>();
    static final Thread[] TABLE = new Thread[1024];
    static volatile int epoch = 1;
    static volatile Object sinkO;

    static void count(Object o, int site) { AT.getAndAdd(shared, (site & 63) << 1, 1L); }

    static void closed(Object o, int site) {
        if (INSIDE.get() == 0) return;
        count(o, site);
    }

    static void tl(Object o, int site) {
        if (INSIDE.get() == 0) return;
        int[] d = DEPTH.get();
        if (d == null || d[0] == 0 || d[1] != epoch) return;
        count(o, site);
    }

    static void id(Object o, int site) {
        if (INSIDE.get() == 0) return;
        Thread t = Thread.currentThread();
        if (TABLE[System.identityHashCode(t) & 1023] != t) return;
        count(o, site);
    }

    @SuppressWarnings("deprecation")
    static void tid(Object o, int site) {
        if (INSIDE.get() == 0) return;
        Thread t = Thread.currentThread();
        if (TABLE[(int) t.getId() & 1023] != t) return;
        count(o, site);
    }

    static void run(String v, long n) {
        Thread t = Thread.currentThread();
        if (!v.equals("closed")) INSIDE.incrementAndGet();
        if (v.equals("tl-in")) DEPTH.set(new int[] {1, epoch});
        if (v.equals("tl-out")) DEPTH.set(new int[] {0, epoch});
        if (v.equals("id-in")) TABLE[System.identityHashCode(t) & 1023] = t;
        @SuppressWarnings("deprecation")
        int tid = (int) t.getId() & 1023;
        if (v.equals("tid-in")) TABLE[tid] = t;
        for (long i = 0; i < n; i++) {
            Object o = new Object();
            switch (v) {
                case "count": count(o, (int) i); break;
                case "closed": closed(o, (int) i); break;
                case "tl-in": case "tl-out": tl(o, (int) i); break;
                case "id-in": id(o, (int) i); break;
                default: tid(o, (int) i);
            }
            if ((i & 0xfffff) == 0) sinkO = o;
        }
    }

    public static void main(String[] a) throws Exception {
        String v = a[0];
        int threads = Integer.parseInt(a[1]);
        long n = Long.parseLong(a[2]);
        double best = Double.MAX_VALUE;
        for (int rep = 0; rep < 5; rep++) {
            Thread[] ts = new Thread[threads];
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                ts[t] = new Thread(() -> run(v, n));
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            best = Math.min(best, (double) (System.nanoTime() - t0) / n);
            INSIDE.set(0);
        }
        System.out.printf("%s threads=%d best %.2f ns per allocation (wall, per thread)%n", v, threads, best);
    }
}
