import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Runs the root `task` in 100 virtual threads, each spinning briefly and sleeping 20 times (so
 * that it unmounts and resumes, maybe on another carrier), and prints the CPU time the whole
 * process used while they ran (`cpu NS`), then `done`. Compiles with JDK 17's javac (the
 * virtual thread executor is reached by reflection) and runs on JDK 21+.
 */
public class VThreadsCpu {
    static volatile long sink;

    static void spin() {
        for (int i = 0; i < 20_000; i++) {
            sink += i;
        }
    }

    static void task() throws InterruptedException {
        for (int i = 0; i < 20; i++) {
            spin();
            Thread.sleep(1);
        }
    }

    static long processCpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    public static void main(String[] args) throws Exception {
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        long before = processCpu();
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        for (int i = 0; i < 100; i++) {
            executor.submit(() -> {
                task();
                return null;
            });
        }
        executor.shutdown();
        executor.awaitTermination(5, TimeUnit.MINUTES);
        System.out.println("cpu " + (processCpu() - before));
        System.out.println("done");
    }
}
