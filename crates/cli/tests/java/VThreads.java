import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Runs the root `task` in 100 virtual threads, each calling `leaf` 50 times and blocking after
 * each call (sleep, park, a contended lock, a monitor, a yield), so that they unmount and resume
 * on other carriers; then once on the main thread, a platform thread. With an argument, waits for
 * the file it names to exist first (for an attach). Compiles with JDK 17's javac (the virtual
 * thread executor is reached by reflection) and runs on JDK 21+.
 */
public class VThreads {
    static final int THREADS = 100;
    static final int CALLS = 50;
    static final ReentrantLock LOCK = new ReentrantLock();
    static final Object MONITOR = new Object();
    static volatile long sink;

    static void leaf(int i) {
        sink += i;
    }

    static void block(int n, int i) throws InterruptedException {
        switch ((n + i) % 5) {
            case 0:
                Thread.sleep(1);
                break;
            case 1:
                LockSupport.parkNanos(200_000);
                break;
            case 2:
                LOCK.lock();
                try {
                    LockSupport.parkNanos(20_000);
                } finally {
                    LOCK.unlock();
                }
                break;
            case 3:
                synchronized (MONITOR) {
                    sink++;
                }
                Thread.sleep(0, 100_000);
                break;
            default:
                Thread.yield();
        }
    }

    static void task(int n) throws InterruptedException {
        for (int i = 0; i < CALLS; i++) {
            leaf(i);
            block(n, i);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            Path go = Path.of(args[0]);
            System.out.println("ready");
            System.out.flush();
            // At most a minute, so that a failed test does not leave the JVM behind.
            for (int waited = 0; !Files.exists(go) && waited < 60_000; waited += 5) {
                Thread.sleep(5);
            }
        }
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        for (int i = 0; i < THREADS; i++) {
            int n = i;
            executor.submit(() -> {
                task(n);
                return null;
            });
        }
        executor.shutdown();
        if (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
            throw new IllegalStateException("virtual threads did not finish");
        }
        task(0);
        System.out.println("done");
    }
}
