import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLongArray;

public class CountBench {
    static final VarHandle AT = MethodHandles.arrayElementVarHandle(long[].class);
    static final long[] shared = new long[8192];
    static final AtomicLongArray ala = new AtomicLongArray(8192);
    static final ThreadLocal<long[]> local = ThreadLocal.withInitial(() -> new long[8192]);
    static volatile Object sinkO;

    static void none(long n) { for (long i = 0; i < n; i++) { Object o = new Object(); if ((i & 0xfffff) == 0) sinkO = o; } }
    static void vh(long n) { for (long i = 0; i < n; i++) { Object o = new Object(); AT.getAndAdd(shared, (int) (i & 63) << 1, 1L); if ((i & 0xfffff) == 0) sinkO = o; } }
    static void ala(long n) { for (long i = 0; i < n; i++) { Object o = new Object(); ala.getAndIncrement((int) (i & 63) << 1); if ((i & 0xfffff) == 0) sinkO = o; } }
    static void tl(long n) { for (long i = 0; i < n; i++) { Object o = new Object(); local.get()[(int) (i & 63) << 1]++; if ((i & 0xfffff) == 0) sinkO = o; } }

    public static void main(String[] a) throws Exception {
        String v = a[0];
        int threads = Integer.parseInt(a[1]);
        long n = Long.parseLong(a[2]);
        double best = Double.MAX_VALUE;
        for (int rep = 0; rep < 5; rep++) {
            Thread[] ts = new Thread[threads];
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                ts[t] = new Thread(() -> {
                    switch (v) {
                        case "none": none(n); break;
                        case "vh": vh(n); break;
                        case "ala": ala(n); break;
                        default: tl(n);
                    }
                });
                ts[t].start();
            }
            for (Thread t : ts) t.join();
            best = Math.min(best, (double) (System.nanoTime() - t0) / n);
        }
        System.out.printf("%s threads=%d best %.2f ns per allocation (wall, per thread)%n", v, threads, best);
    }
}
