import java.nio.file.Files;
import java.nio.file.Path;

/** Declares the method its subclass calls on itself. */
class InhBase {
    static long sink;

    public void handle(String target, int n) {
        leaf(n);
    }

    void leaf(int n) {
        for (int i = 0; i < n; i++) {
            sink += i;
        }
    }
}

/** Overrides it: the call below could reach more than one method, but not on `InhServer`. */
class InhOther extends InhBase {
    public void handle(String target, int n) {
        sink--;
    }
}

/** Calls the method it inherits, on a branch (a deferred call), as Jetty's `Server.handle` does. */
class InhServer extends InhBase {
    public void handle(int n) {
        String target = "target" + (n & 1);
        if (n < 0) {
            sink++;
        } else {
            this.handle(target, n);
        }
    }
}

/**
 * A server's loop for a profiler attached while it runs: prints `ready PID`, then calls the root
 * `InhServer.handle(int)` until the file named by its first argument exists (at most a minute,
 * so that a failed test leaves no JVM behind), and prints `worked CALLS`.
 */
public class Inherited {
    public static void main(String[] args) throws Exception {
        InhServer server = new InhServer();
        server.handle(-1);
        new InhOther().handle("other", 0);
        System.out.println("ready " + ProcessHandle.current().pid());
        Path end = Path.of(args[0]);
        long calls = 0;
        long until = System.nanoTime() + 60_000_000_000L;
        while (!Files.exists(end) && System.nanoTime() < until) {
            server.handle(10);
            calls++;
            Thread.sleep(0, 100_000);
        }
        System.out.println("worked " + calls);
    }
}
