import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Lazy revelation on the agent's own thread (reveal=async): calls root() until the agent's log
 * (args[0]) says the reveal thread instrumented what it calls, then 1000 more times, and prints
 * how many calls and their checksum.
 */
public class AsyncReveal {
    static int leaf(int x) {
        return x * 31 + 7;
    }

    static int middle(int x) {
        return leaf(x) ^ leaf(x + 1);
    }

    static int root(int x) {
        return middle(x) + 1;
    }

    public static void main(String[] args) throws Exception {
        Path log = Path.of(args[0]);
        long sum = 0;
        int calls = 0;
        while (calls < 60_000 && !revealed(log)) {
            sum += root(calls++);
            Thread.sleep(1);
        }
        for (int i = 0; i < 1000; i++) {
            sum += root(calls++);
        }
        System.out.println("calls " + calls + " sum " + sum);
    }

    static boolean revealed(Path log) throws Exception {
        return Files.exists(log) && Files.readString(log).contains("asynchronous revelation");
    }
}
