import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A warm-up and a measured part, for `ferrofluid attach PID --reset`: five `work` calls, then
 * `hold` (a root, in flight across the reset) says `warm PID` on stdout and waits for the file
 * named by the argument; then three more `work` calls.
 */
public class Warm {
    static int sink;

    static void step(int i) {
        sink += i;
    }

    static void work(int n) {
        for (int i = 0; i < n; i++) {
            step(i);
        }
    }

    static void hold(Path go) throws InterruptedException {
        // Said inside `hold`, so that it is in flight when the test resets.
        System.out.println("warm " + ProcessHandle.current().pid());
        System.out.flush();
        // At most a minute, so that a failed test does not leave the JVM behind.
        for (int waited = 0; !Files.exists(go) && waited < 60_000; waited += 5) {
            Thread.sleep(5);
        }
        work(2);
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 5; i++) {
            work(10);
        }
        hold(Path.of(args[0]));
        for (int i = 0; i < 3; i++) {
            work(4);
        }
        System.out.println("sink " + sink);
    }
}
