import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** A thread asleep for the whole run beside a spinning one; or spin, say so, and wait. */
public class Waits {
    static volatile long sink;

    static void spin(long cpuNanos) {
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        long end = bean.getCurrentThreadCpuTime() + cpuNanos;
        while (bean.getCurrentThreadCpuTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                sink += i ^ sink;
            }
        }
    }

    static void sleeper(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("wall")) {
            long ms = Long.parseLong(args[1]);
            Thread t = new Thread(() -> {
                try {
                    sleeper(ms);
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "sleeper");
            t.start();
            spin(300_000_000L);
            t.join();
        } else {
            spin(1_000_000_000L);
            System.out.println("ready");
            new BufferedReader(new InputStreamReader(System.in)).readLine();
        }
        System.out.println("done " + (sink != 42));
    }
}
