import java.io.File;
import java.util.HashMap;
import java.util.Map;

/**
 * Narrowing a running alloc session: each phase puts n entries into a map and forgets them
 * (a leak) beside n short-lived objects, each allocated in a class of its own, and waits between
 * phases for a file the test creates. Prints each phase's checksum.
 */
public class Narrow {
    static final Map<Integer, Entry> MAP = new HashMap<>();

    static final class Entry {
        final int key;

        Entry(int key) {
            this.key = key;
        }
    }

    static final class Noise {
        final int value;

        Noise(int value) {
            this.value = value;
        }
    }

    static final class Cache {
        static void remember(int key) {
            MAP.put(key, new Entry(key));
        }
    }

    static final class Churn {
        static int noise(int i) {
            return new Noise(i).value;
        }
    }

    static long phase(int n, int base) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            Cache.remember(base + i);
            sum += Churn.noise(i);
        }
        return sum;
    }

    static void await(File f) throws InterruptedException {
        while (!f.exists()) {
            Thread.sleep(5);
        }
    }

    public static void main(String[] args) throws Exception {
        int n1 = Integer.parseInt(args[0]);
        int n2 = Integer.parseInt(args[1]);
        File dir = new File(args[2]);
        System.out.println("ready");
        await(new File(dir, "go1"));
        long sum = phase(n1, 0);
        System.out.println("phase1 " + sum);
        await(new File(dir, "go2"));
        sum += phase(n2, n1);
        System.out.println("phase2 " + sum + " " + MAP.size());
        await(new File(dir, "end"));
    }
}
