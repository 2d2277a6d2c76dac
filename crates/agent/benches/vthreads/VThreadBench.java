import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The cost of virtual-thread switches (mount and unmount) with and without the agent: THREADS
 * virtual threads each yield YIELDS times, in `work` (a root, or not instrumented); best of 5
 * runs after 3 warm-ups, ns per yield. Compiles with JDK 17's javac, runs on JDK 21+.
 */
public class VThreadBench {
    static final int THREADS = 1_000;
    static volatile long sink;

    static void leaf(int i) {
        sink += i;
    }

    static void work(int yields) {
        for (int i = 0; i < yields; i++) {
            leaf(i);
            Thread.yield();
        }
    }

    static long run(int yields) throws Exception {
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        long start = System.nanoTime();
        for (int i = 0; i < THREADS; i++) {
            executor.submit(() -> work(yields));
        }
        executor.shutdown();
        executor.awaitTermination(1, TimeUnit.MINUTES);
        return System.nanoTime() - start;
    }

    public static void main(String[] args) throws Exception {
        int yields = Integer.parseInt(args[0]);
        for (int i = 0; i < 3; i++) {
            run(yields);
        }
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            best = Math.min(best, run(yields));
        }
        System.out.printf("%.1f ns per yield%n", (double) best / THREADS / yields);
    }
}
