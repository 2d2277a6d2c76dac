import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.IntUnaryOperator;

/**
 * Stress for the stack walk: classes loaded and unloaded all the time (a new class loader per
 * iteration defining Payload again), each new class compiled by the JIT (and its code thrown
 * away when the class is unloaded), exceptions, deep recursion, on several threads.
 */
public class Churn {
    static volatile long sink;

    static final class Loader extends ClassLoader {
        Loader() {
            super(Churn.class.getClassLoader());
        }

        Class<?> define(byte[] bytes) {
            return defineClass("Payload", bytes, 0, bytes.length);
        }
    }

    static long recurse(int depth) {
        if (depth == 0) {
            return System.nanoTime() & 7;
        }
        return recurse(depth - 1) + depth;
    }

    public static void main(String[] args) throws Exception {
        byte[] bytes = Files.readAllBytes(Path.of(args[0]));
        long seconds = Long.parseLong(args[1]);
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        Thread[] threads = new Thread[3];
        long[] loaded = new long[threads.length];
        for (int t = 0; t < threads.length; t++) {
            final int me = t;
            threads[t] = new Thread(() -> {
                try {
                    int i = 0;
                    while (System.nanoTime() < end) {
                        Class<?> c = new Loader().define(bytes);
                        IntUnaryOperator op = (IntUnaryOperator) c.getDeclaredConstructor().newInstance();
                        sink += op.applyAsInt(i++);
                        sink += recurse(200 + (i & 63));
                        loaded[me]++;
                        if ((i & 127) == 0) {
                            System.gc();
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        long total = 0;
        for (long l : loaded) {
            total += l;
        }
        System.out.println("loaded " + total);
    }
}
