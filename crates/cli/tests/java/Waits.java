import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Threads that run, sleep and block, for the sample mode's clocks: `spinner` computes in `spin`,
 * `sleeper` sleeps in `sleeper` holding a lock, `blocked` waits in `blocked` for that lock.
 * `Waits STOP MAX_MS` prints `ready` once all three are in place, and ends them (and prints
 * `done`) when the file STOP exists or after MAX_MS. `Waits virtual MS`: four virtual threads
 * compute in `vwork` for MS each (JDK 21+; the executor is reached by reflection, so that JDK
 * 17's javac compiles it).
 */
public class Waits {
    static final Object LOCK = new Object();
    static volatile boolean done;
    static volatile long sink;

    static long spin() {
        long x = 1;
        while (!done) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + (i ^ (x >>> 29));
            }
            sink += x;
        }
        return x;
    }

    static void sleeper(CountDownLatch holding) {
        synchronized (LOCK) {
            holding.countDown();
            try {
                Thread.sleep(600_000);
            } catch (InterruptedException e) {
                // Interrupted at the end.
            }
        }
    }

    static void blocked() {
        synchronized (LOCK) {
            sink++;
        }
    }

    static long vwork(long millis) {
        long end = System.nanoTime() + millis * 1_000_000;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + (i ^ (x >>> 29));
            }
        }
        return x;
    }

    static void virtual(long millis) throws Exception {
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        for (int i = 0; i < 4; i++) {
            executor.submit(() -> sink += vwork(millis));
        }
        executor.shutdown();
        executor.awaitTermination(5, TimeUnit.MINUTES);
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("virtual")) {
            virtual(Long.parseLong(args[1]));
            System.out.println("done");
            return;
        }
        Path stop = Path.of(args[0]);
        long max = Long.parseLong(args[1]);
        CountDownLatch holding = new CountDownLatch(1);
        Thread spinner = new Thread(Waits::spin, "spinner");
        Thread sleeper = new Thread(() -> sleeper(holding), "sleeper");
        Thread blocked = new Thread(Waits::blocked, "blocked");
        spinner.start();
        sleeper.start();
        holding.await();
        blocked.start();
        while (blocked.getState() != Thread.State.BLOCKED) {
            Thread.sleep(1);
        }
        System.out.println("ready");
        System.out.flush();
        long end = System.nanoTime() + max * 1_000_000;
        while (!Files.exists(stop) && System.nanoTime() < end) {
            Thread.sleep(5);
        }
        done = true;
        sleeper.interrupt();
        spinner.join();
        sleeper.join();
        blocked.join();
        System.out.println("done");
    }
}
