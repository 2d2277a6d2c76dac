package ferrofluid;

/**
 * Counting hooks for the planner's end-to-end test: prints "id count" per entered method and
 * "site class" per receiver class seen at a receiver site, at exit.
 */
public final class Hooks {
    private static final int[] COUNTS = new int[4096];
    private static final java.util.Set<String> RECEIVERS = new java.util.TreeSet<>();
    private static final java.util.Set<Integer> SITES = new java.util.TreeSet<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (int id = 0; id < COUNTS.length; id++) {
                if (COUNTS[id] > 0) {
                    System.out.println("ferrofluid-count " + id + " " + COUNTS[id]);
                }
            }
            synchronized (RECEIVERS) {
                RECEIVERS.forEach(r -> System.out.println("ferrofluid-receiver " + r));
                SITES.forEach(s -> System.out.println("ferrofluid-site " + s + " reached"));
            }
        }));
    }

    private Hooks() {}

    public static void enter(int id) {
        COUNTS[id]++;
    }

    public static void exit(int id) {}

    public static void unwind(int id) {}

    public static void site(int site) {
        synchronized (RECEIVERS) {
            SITES.add(site);
        }
    }

    public static void receiver(Object o, int site) {
        if (o != null) {
            synchronized (RECEIVERS) {
                RECEIVERS.add(site + " " + o.getClass().getName());
            }
        }
    }
}
