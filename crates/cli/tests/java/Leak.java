import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The DDJ article's leak: entries put into a map and forgotten, beside bulk short-lived objects
 * and a set allocated once at start. Run with a small young generation so that GCs happen.
 */
public class Leak {
    static class Entry { long a, b, c, d; }
    static class Temp { final long[] data = new long[8]; }
    static class Stable { final int[] data = new int[4]; }

    static final Map<Integer, Entry> cache = new HashMap<>();
    static final List<Stable> stable = new ArrayList<>();
    static long sink;

    static void remember(int key) { cache.put(key, new Entry()); }

    static void churn() {
        for (int i = 0; i < 2000; i++) {
            Temp t = new Temp();
            sink += t.data.length;
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = Long.parseLong(args[0]);
        for (int i = 0; i < 20000; i++) stable.add(new Stable());
        long end = System.currentTimeMillis() + millis;
        int key = 0;
        while (System.currentTimeMillis() < end) {
            for (int i = 0; i < 20; i++) remember(key++);
            churn();
            Thread.sleep(1);
        }
        System.out.println("entries " + cache.size() + " stable " + stable.size());
    }
}
