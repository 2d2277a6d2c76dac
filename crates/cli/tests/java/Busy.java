import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Worker threads `worker-0`.. each calling the root `serve` in a loop until the file named by
 * the first argument exists (at most a minute); `serve` goes three `chain` calls deep and calls
 * the tiny `tiny` 200 times there, so that a thread is nearly always deep inside the root and
 * pushing events fast. The second argument is the number of workers. Prints `ready PID` once
 * they run.
 */
public class Busy {
    static volatile int sink;

    static int tiny(int i) {
        return i * 31 + 7;
    }

    static int chain(int depth, int n) {
        if (depth == 0) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                s += tiny(i);
            }
            return s;
        }
        return chain(depth - 1, n) + 1;
    }

    static void serve(int n) {
        sink += chain(3, n);
    }

    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[0]);
        int threads = Integer.parseInt(args[1]);
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int t = 0; t < threads; t++) {
            Thread w = new Thread(() -> {
                while (!Files.exists(stop) && System.nanoTime() < deadline) {
                    for (int k = 0; k < 100; k++) {
                        serve(200);
                    }
                }
            }, "worker-" + t);
            w.setDaemon(true);
            w.start();
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (!Files.exists(stop) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
    }
}
