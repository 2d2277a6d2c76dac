import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** `--cpu` end to end: a method that spins, one that sleeps, and many tiny calls. */
public class Cpu {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static long sink;

    /** Spins until this thread has run 50 ms on a CPU (however busy the machine is). */
    static void spin() {
        long start = MX.getCurrentThreadCpuTime();
        while (MX.getCurrentThreadCpuTime() - start < 50_000_000L) {
            for (int i = 0; i < 1000; i++) {
                sink += i ^ sink;
            }
        }
    }

    static void sleep() throws InterruptedException {
        Thread.sleep(50);
    }

    static int tiny(int x) {
        return x * 31 + 1;
    }

    static void root() throws InterruptedException {
        // The program's own measurement of spin(), to compare with the profile's.
        long cpu = MX.getCurrentThreadCpuTime();
        long wall = System.nanoTime();
        spin();
        cpu = MX.getCurrentThreadCpuTime() - cpu;
        wall = System.nanoTime() - wall;
        sleep();
        for (int i = 0; i < 10_000; i++) {
            sink += tiny(i);
        }
        System.out.println("spin cpu " + cpu + " wall " + wall);
    }

    public static void main(String[] args) throws InterruptedException {
        root();
    }
}
