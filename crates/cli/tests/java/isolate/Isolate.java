import java.nio.file.Files;
import java.nio.file.Path;

/** Implements the missing interface: it cannot even load. */
class IsoMissingImpl implements IsoMissing {
    public int value() {
        return 1;
    }
}

/**
 * Loads, but cannot link: verifying the constructor needs to know whether `IsoMissingImpl`
 * is an `IsoMissing`, and neither can be loaded.
 */
class IsoUnlinkable {
    IsoMissing field;

    IsoUnlinkable() {
        field = new IsoMissingImpl();
    }
}

/** The same, first loaded inside the root: it is instrumented as it loads, then fails to link. */
class IsoLate {
    IsoMissing field;

    IsoLate() {
        field = new IsoMissingImpl();
    }
}

/** Its static initialiser fails when the root first uses it: it is left in error state. */
class IsoBroken {
    static int base = Integer.parseInt("not a number");

    static int value() {
        return base;
    }
}

/** Its static initialiser fails before the root runs: in error state before it is profiled. */
class IsoBrokenEarly {
    static int base = Integer.parseInt("not a number either");

    static int value() {
        return base;
    }
}

/** Callees next to the failing classes. */
class IsoGood {
    static int twice(int i) {
        return 2 * i;
    }
}

class IsoOther {
    int sum;

    void add(int i) {
        sum += IsoGood.twice(i);
    }
}

/**
 * A program with classes that cannot link or initialise, for failure isolation. It loads
 * `IsoUnlinkable` (which fails to link) and `IsoBrokenEarly` (whose initialiser fails) before
 * the profiler attaches, prints `ready PID`, waits for the file named by its first argument,
 * then calls the root `work` three times, each call trying the failing classes and calling the
 * good ones; it prints `worked SUM failures N` and waits for the file named by its second
 * argument (at most a minute each, so that a failed test leaves no JVM behind).
 */
public class Isolate {
    static int failures;

    static int work(int n) {
        IsoOther other = new IsoOther();
        for (int i = 0; i < n; i++) {
            other.add(i);
        }
        try {
            new IsoUnlinkable();
        } catch (LinkageError e) {
            failures++;
        }
        try {
            new IsoLate();
        } catch (LinkageError e) {
            failures++;
        }
        try {
            other.sum += IsoBroken.value();
        } catch (LinkageError e) {
            failures++;
        }
        try {
            other.sum += IsoBrokenEarly.value();
        } catch (LinkageError e) {
            failures++;
        }
        return other.sum;
    }

    static void await(Path file) throws InterruptedException {
        for (int waited = 0; !Files.exists(file) && waited < 60_000; waited += 5) {
            Thread.sleep(5);
        }
    }

    public static void main(String[] args) throws Exception {
        try {
            Class.forName("IsoUnlinkable");
        } catch (LinkageError e) {
            failures++;
        }
        try {
            IsoBrokenEarly.value();
        } catch (LinkageError e) {
            failures++;
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        await(Path.of(args[0]));
        int sum = 0;
        for (int round = 0; round < 3; round++) {
            sum += work(4);
        }
        System.out.println("worked " + sum + " failures " + failures);
        System.out.flush();
        await(Path.of(args[1]));
    }
}
