import java.nio.file.Files;
import java.nio.file.Path;

/** Calls `round` (ten `step`s through `work`) every millisecond until the file named by the argument exists. */
public class Rounds {
    static int sink;

    static void step(int i) {
        sink += i;
    }

    static void work() {
        for (int i = 0; i < 10; i++) {
            step(i);
        }
    }

    static void round() {
        work();
    }

    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[0]);
        System.out.println("ready");
        System.out.flush();
        // At most a minute, so that a failed test does not leave the JVM behind.
        for (int waited = 0; !Files.exists(stop) && waited < 60_000; waited++) {
            round();
            Thread.sleep(1);
        }
    }
}
