import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Many more virtual threads than carriers, each calling the short, CPU-bound root `compute` 20
 * times and parking or sleeping between the calls (outside the root, so that each call begins
 * a new recording on whatever carrier runs it). Prints `done`. Compiles with JDK 17's javac (the
 * virtual thread executor is reached by reflection) and runs on JDK 21+.
 */
public class VtCompute {
    static volatile long sink;

    static long compute(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += (i * 31L) ^ (s >>> 3);
        }
        return s;
    }

    static void task(int k) throws InterruptedException {
        for (int r = 0; r < 20; r++) {
            sink += compute(2_000);
            if ((k + r) % 2 == 0) {
                Thread.sleep(0, 100_000);
            } else {
                LockSupport.parkNanos(100_000);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        for (int i = 0; i < 2_000; i++) {
            int k = i;
            executor.submit(() -> {
                task(k);
                return null;
            });
        }
        executor.shutdown();
        executor.awaitTermination(5, TimeUnit.MINUTES);
        System.out.println("done");
    }
}
